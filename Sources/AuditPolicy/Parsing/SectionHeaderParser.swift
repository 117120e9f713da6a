import Foundation

/// Parses `[ACTION ARG] key=value …` into a ``Section``, collecting every problem it finds.
struct SectionHeaderParser {
    let file: String
    let lineNumber: Int
    private(set) var diagnostics: [Diagnostic] = []
    /// The column of the header's `[`.
    private var headerColumn = 1

    init(file: String, lineNumber: Int) {
        self.file = file
        self.lineNumber = lineNumber
    }

    /// Parses the header; nil when it is too broken to apply to the rules under it.
    mutating func parse(_ scanner: inout LineScanner) -> Section? {
        headerColumn = scanner.column
        let headerLocation = location(scanner.column)
        scanner.advance()  // '['
        // The header ends at the first ']' followed by whitespace or the end of the line, so a
        // redirect target may itself contain ']'.
        let text = scanner.text
        var close: String.Index?
        var probe = scanner.index
        while probe < text.endIndex {
            let next = text.index(after: probe)
            if text[probe] == "]", next == text.endIndex || text[next] == " " || text[next] == "\t" {
                close = probe
                break
            }
            probe = next
        }
        guard let close else {
            error(at: headerLocation, "section header has no closing ']'")
            return nil
        }
        scanner.skipWhitespace()
        let actionColumn = scanner.column
        let keyword = scanner.readWord(stoppingAt: ["]"])
        scanner.skipWhitespace()
        let argumentColumn = scanner.column
        let argument = scanner.index < close ? text[scanner.index..<close].trimmingTrailingWhitespace : ""
        scanner.move(to: close)
        scanner.advance()  // ']'

        var section: Section?
        switch keyword {
        case "":
            error(at: location(actionColumn), "empty section header (expected an action: \(Self.actionList))")
        case "redirect":
            if argument.isEmpty {
                error(at: location(actionColumn), "redirect needs a target URL, e.g. [redirect https://example.com/]")
            } else if argument.contains(where: { $0 == " " || $0 == "\t" }) {
                error(at: location(argumentColumn), "redirect target must not contain spaces")
            } else {
                let template = RedirectTemplate(String(argument))
                if template.startsLikeAbsoluteURL {
                    section = Section(action: .redirect(target: template), location: headerLocation)
                    section?.targetLocation = location(argumentColumn)
                } else {
                    error(
                        at: location(argumentColumn),
                        "redirect target '\(argument)' is not an absolute http(s) URL"
                    )
                }
            }
        case "respond":
            section = respondSection(argument: argument, actionColumn: actionColumn, argumentColumn: argumentColumn)
            section?.targetLocation = location(argumentColumn)
        case "block", "warn", "allow", "record", "cache":
            if argument.isEmpty {
                section = Section(action: Self.action(keyword), location: headerLocation)
            } else {
                error(at: location(argumentColumn), "action '\(keyword)' takes no argument, found '\(argument)'")
            }
        default:
            error(at: location(actionColumn), "unknown action '\(keyword)' (expected \(Self.actionList))")
        }
        let options = parseOptions(&scanner)
        guard var section else { return nil }
        apply(options, to: &section)
        return section
    }

    private static let actionList = RuleAction.keywords.joined(separator: ", ")

    /// `[respond STATUS]` or `[respond handler:NAME]`; the body comes from the options.
    private mutating func respondSection(argument: Substring, actionColumn: Int, argumentColumn: Int) -> Section? {
        let at = location(argumentColumn)
        if argument.isEmpty {
            error(
                at: location(actionColumn),
                "respond needs a status or a handler, e.g. [respond 200] or [respond handler:NAME]")
            return nil
        }
        if argument.hasPrefix("handler:") {
            let name = argument.dropFirst("handler:".count)
            guard name.isValidName else {
                error(at: at, "invalid handler name '\(name)' (use letters, digits, '.', '_' and '-')")
                return nil
            }
            let responder = LocalResponder(status: nil, contentType: nil, source: .handler(String(name)))
            return Section(action: .respond(responder), location: headerLocation(at))
        }
        guard let status = Int(argument), LocalResponder.statuses.contains(status) else {
            error(at: at, "respond status must be a number from 200 to 599 or handler:NAME, found '\(argument)'")
            return nil
        }
        let responder = LocalResponder(status: status, contentType: nil, source: .empty)
        return Section(action: .respond(responder), location: headerLocation(at))
    }

    /// The header's own location (its `[`), for a section made from the argument at `at`.
    private func headerLocation(_ at: SourceLocation) -> SourceLocation {
        SourceLocation(file: file, line: lineNumber, column: headerColumn)
    }

    private static func action(_ keyword: Substring) -> RuleAction {
        switch keyword {
        case "block": .block
        case "warn": .warn
        case "allow": .allow
        case "cache": .cache(CacheSettings())
        default: .record
        }
    }

    private struct Option {
        let key: String
        let value: String
        let keyColumn: Int
        let valueColumn: Int
    }

    /// Reads `key=value` and `key="quoted value"` pairs up to the end of the line.
    private mutating func parseOptions(_ scanner: inout LineScanner) -> [Option] {
        var options: [Option] = []
        var seen: Set<String> = []
        while true {
            scanner.skipWhitespace()
            if scanner.isAtEnd { return options }
            let keyColumn = scanner.column
            let key = String(scanner.readWord(stoppingAt: ["="]))
            let value: String
            let valueColumn: Int
            if scanner.current != "=", Section.flagOptionNames.contains(key) {
                (value, valueColumn) = ("", keyColumn)
            } else {
                guard scanner.current == "=" else {
                    if Section.optionNames.contains(key) {
                        error(at: location(keyColumn), "option '\(key)' needs a value (key=value)")
                    } else {
                        unknownOption(key, at: keyColumn)
                    }
                    continue
                }
                scanner.advance()
                valueColumn = scanner.column
                guard let read = readValue(&scanner) else { return options }
                value = read
            }
            if !Section.optionNames.contains(key) {
                unknownOption(key, at: keyColumn)
            } else if Section.flagOptionNames.contains(key), !value.isEmpty {
                error(at: location(keyColumn), "option '\(key)' takes no value (write it alone: \(key))")
            } else if !seen.insert(key).inserted {
                error(at: location(keyColumn), "option '\(key)' is given twice")
            } else {
                options.append(Option(key: key, value: value, keyColumn: keyColumn, valueColumn: valueColumn))
            }
        }
    }

    /// Reports `key`, which is no option's name, with the names there are.
    private mutating func unknownOption(_ key: String, at column: Int) {
        error(at: location(column), "unknown option '\(key)' (expected \(Section.optionNames.joined(separator: ", ")))")
    }

    /// A bare word, or a double-quoted string in which `\"` and `\\` stand for `"` and `\`.
    private mutating func readValue(_ scanner: inout LineScanner) -> String? {
        guard scanner.current == "\"" else { return String(scanner.readWord()) }
        let openColumn = scanner.column
        scanner.advance()
        var value = ""
        while let character = scanner.current {
            scanner.advance()
            switch character {
            case "\"":
                if let next = scanner.current, next != " ", next != "\t" {
                    error(at: location(scanner.column), "expected a space after the closing quote, found '\(next)'")
                    _ = scanner.readWord()
                }
                return value
            case "\\":
                if let escaped = scanner.current, escaped == "\"" || escaped == "\\" {
                    value.append(escaped)
                    scanner.advance()
                } else {
                    value.append(character)
                }
            default:
                value.append(character)
            }
        }
        error(at: location(openColumn), "quoted value has no closing '\"'")
        return nil
    }

    private mutating func apply(_ options: [Option], to section: inout Section) {
        applyResponse(options.filter { Section.responseOptionNames.contains($0.key) }, to: &section)
        applyCache(options.filter { Section.cacheOptionNames.contains($0.key) }, to: &section)
        for option in options
        where !Section.responseOptionNames.contains(option.key) && !Section.cacheOptionNames.contains(option.key) {
            let at = location(option.valueColumn)
            switch option.key {
            case "message":
                section.message = option.value
            case "field":
                if let field = RequestField(option: option.value) {
                    section.field = field
                } else {
                    error(
                        at: at,
                        "unknown field '\(option.value)' (expected url, host, path, query, userinfo, method or header:NAME)"
                    )
                }
            case "methods":
                let methods = option.value.split(separator: ",", omittingEmptySubsequences: false)
                if let bad = methods.first(where: { $0.isEmpty || !$0.allSatisfy(\.isHTTPTokenCharacter) }) {
                    error(at: at, "invalid method '\(bad)' in methods (expected a list such as GET,POST)")
                } else {
                    section.methods = Set(methods.map { $0.uppercased() })
                    let uncacheable = section.methods.subtracting(Section.cacheableMethods)
                    if case .cache = section.action, !uncacheable.isEmpty {
                        error(
                            at: at,
                            "a cache rule keeps responses to GET and HEAD only (found "
                                + "\(uncacheable.sorted().joined(separator: ", ")) in methods)")
                    }
                }
            case "priority":
                if let priority = Int(option.value) {
                    section.priority = priority
                    section.hasPriorityOption = true
                } else {
                    error(at: at, "priority must be an integer, found '\(option.value)'")
                }
            case "case":
                switch option.value {
                case "insensitive": section.isCaseInsensitive = true
                case "sensitive": section.isCaseInsensitive = false
                default: error(at: at, "case must be 'insensitive' or 'sensitive', found '\(option.value)'")
                }
            default:  // tags
                let tags = option.value.split(separator: ",", omittingEmptySubsequences: false)
                if tags.contains(where: { !$0.isValidName }) {
                    error(at: at, "invalid tags '\(option.value)' (expected names such as a,b)")
                } else {
                    section.tags = tags.map(String.init)
                }
            }
        }
        // A cache rule applies to the requests whose responses it can keep, so that a request of
        // another method has no cache rule in its verdict, its record or a `.test` case.
        if case .cache = section.action, section.methods.isEmpty { section.methods = Section.cacheableMethods }
        if section.hasPriorityOption, section.action == .record {
            diagnostics.append(
                Diagnostic(.warning, at: section.location, "priority has no effect on record rules")
            )
        }
    }

    /// Applies `body=`, `file=` and `type=` to a respond section; an error on any other.
    private mutating func applyResponse(_ options: [Option], to section: inout Section) {
        guard case .respond(let responder) = section.action else {
            for option in options {
                error(
                    at: location(option.keyColumn),
                    "option '\(option.key)' applies to respond sections only (found on \(section.action.keyword))")
            }
            return
        }
        let body = options.first { $0.key == "body" }
        let file = options.first { $0.key == "file" }
        let type = options.first { $0.key == "type" }
        if let handler = responder.handler {
            for option in options {
                error(
                    at: location(option.keyColumn),
                    "option '\(option.key)' does not apply to [respond handler:\(handler)]: the handler gives the response"
                )
            }
            return
        }
        if let type, type.value.isEmpty || type.value.contains(where: { $0.isNewline }) || !type.value.contains("/") {
            error(at: location(type.valueColumn), "type must be a MIME type such as text/plain, found '\(type.value)'")
        }
        var source = LocalResponder.Source.empty
        var contentType = type?.value
        if body != nil, let file {
            error(at: location(file.keyColumn), "respond takes body= or file=, not both")
        } else if let body {
            source = .body(RedirectTemplate(body.value))
            contentType = contentType ?? "text/plain; charset=utf-8"
        } else if let file {
            guard let bytes = readResponseFile(file) else { return }
            source = .file(path: file.value, bytes: bytes)
            contentType = contentType ?? LocalResponder.contentType(forFile: file.value)
        }
        section.action = .respond(LocalResponder(status: responder.status, contentType: contentType, source: source))
        if let body { section.targetLocation = location(body.valueColumn) }
    }

    /// Applies `ttl=`, `offline` and `private` to a cache section; an error on any other.
    private mutating func applyCache(_ options: [Option], to section: inout Section) {
        guard case .cache = section.action else {
            for option in options {
                error(
                    at: location(option.keyColumn),
                    "option '\(option.key)' applies to cache sections only (found on \(section.action.keyword))")
            }
            return
        }
        var timeToLive: Duration?
        if let ttl = options.first(where: { $0.key == "ttl" }) {
            timeToLive = CacheSettings.duration(parsing: ttl.value)
            if timeToLive == nil {
                error(
                    at: location(ttl.valueColumn),
                    "ttl must be a duration such as 90s, 10m, 2h, 7d or 1h30m, found '\(ttl.value)'")
            }
        }
        section.action = .cache(
            CacheSettings(
                timeToLive: timeToLive, servesOffline: options.contains { $0.key == "offline" },
                storesPrivateRequests: options.contains { $0.key == "private" }))
    }

    /// The bytes of a `file=` responder, its path relative to the rules file's folder; nil after an
    /// error when it is missing, unreadable, a folder or larger than the limit.
    private mutating func readResponseFile(_ option: Option) -> [UInt8]? {
        let at = location(option.valueColumn)
        let folder = file.contains("/") ? String(file[..<(file.lastIndex(of: "/") ?? file.endIndex)]) : "."
        let path = option.value.hasPrefix("/") ? option.value : folder + "/" + option.value
        guard let kind = PolicySource.itemKind(atPath: path) else {
            error(at: at, "respond file '\(option.value)' not found (looked for \(path))")
            return nil
        }
        guard kind == .file else {
            error(at: at, "respond file '\(option.value)' is a folder")
            return nil
        }
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        guard size <= LocalResponder.maximumFileBytes else {
            error(
                at: at,
                "respond file '\(option.value)' is \(size) bytes; a respond file may be at most "
                    + "\(LocalResponder.maximumFileBytes) bytes")
            return nil
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            error(at: at, "cannot read respond file '\(option.value)' (\(path))")
            return nil
        }
        return [UInt8](data)
    }

    private func location(_ column: Int) -> SourceLocation {
        SourceLocation(file: file, line: lineNumber, column: column)
    }

    private mutating func error(at location: SourceLocation, _ message: String) {
        diagnostics.append(Diagnostic(.error, at: location, message))
    }
}
