import AuditLocking
import AuditRegex
import Dispatch

/// Turns one `.rules` file into compiled rules, collecting every problem with its location.
///
/// The format, line by line (leading whitespace ignored):
/// - blank lines and lines starting with `#` are skipped;
/// - `@category NAME` sets the category of the rules that follow (default: the file name
///   without extension);
/// - `[ACTION ARG] key=value …` starts a section (see ``RuleAction`` and `docs/rule-language.md`);
/// - `ID PATTERN` is a rule: the pattern is the rest of the line, trailing whitespace trimmed.
struct RuleFileParser {
    let source: SourceText
    let limits: MatchLimits
    private(set) var rules: [Rule] = []
    private(set) var diagnostics: [Diagnostic] = []

    private enum SectionState {
        case none
        case broken
        case open(Section, ruleCount: Int)
    }

    private var category: String
    private var section = SectionState.none
    /// Rules read but not yet compiled: patterns are compiled together at the end, on every core.
    private var pending: [PendingRule] = []

    /// A rule line as read, waiting for its pattern to be compiled.
    private struct PendingRule: Sendable {
        let name: Substring
        let patternText: String
        let isCaseInsensitive: Bool
        let section: Section?
        let category: String
        let line: Int
        let patternColumn: Int
        let idLocation: SourceLocation
    }

    init(source: SourceText, limits: MatchLimits) {
        self.source = source
        self.limits = limits
        let fileName = source.file.split(separator: "/").last.map(String.init) ?? source.file
        let stem = fileName.hasSuffix(".rules") ? String(fileName.dropLast(".rules".count)) : fileName
        self.category = stem
    }

    mutating func parse() {
        if !category.isValidName {
            error(
                at: SourceLocation(file: source.file, line: 1, column: 1),
                "file name '\(category)' is not a valid category; add '@category NAME' before the first rule"
            )
        }
        for (number, text) in source.numberedLines {
            var scanner = LineScanner(text)
            scanner.skipWhitespace()
            switch scanner.current {
            case nil, "#":
                continue
            case "@":
                parseDirective(&scanner, line: number)
            case "[":
                closeSection()
                var header = SectionHeaderParser(file: source.file, lineNumber: number)
                let parsed = header.parse(&scanner)
                diagnostics += header.diagnostics
                section = parsed.map { .open($0, ruleCount: 0) } ?? .broken
            default:
                parseRule(&scanner, line: number)
            }
        }
        closeSection()
        let patterns = Self.compile(pending, limits: limits)
        for (rule, pattern) in zip(pending, patterns) { finish(rule, pattern) }
        pending = []
    }

    /// Each rule's pattern compiled, in order; large files are split among the processor's cores.
    private static func compile(_ rules: [PendingRule], limits: MatchLimits) -> [Result<Pattern, PatternError>] {
        @Sendable func compile(_ rule: PendingRule) -> Result<Pattern, PatternError> {
            Result { () throws(PatternError) in
                try Pattern(rule.patternText, caseInsensitive: rule.isCaseInsensitive, limits: limits)
            }
        }
        let chunkCount = min(ProcessorCount.active, rules.count / 512)
        guard chunkCount > 1 else { return rules.map(compile) }
        let chunks = Locked([[Result<Pattern, PatternError>]](repeating: [], count: chunkCount))
        DispatchQueue.concurrentPerform(iterations: chunkCount) { chunk in
            let range = (rules.count * chunk / chunkCount)..<(rules.count * (chunk + 1) / chunkCount)
            let compiled = rules[range].map(compile)
            chunks.withLock { $0[chunk] = compiled }
        }
        return chunks.withLock { $0.flatMap { $0 } }
    }

    private mutating func parseDirective(_ scanner: inout LineScanner, line: Int) {
        let at = location(line, scanner.column)
        let directive = scanner.readWord()
        guard directive == "@category" else {
            error(at: at, "unknown directive '\(directive)' (expected @category)")
            return
        }
        scanner.skipWhitespace()
        let nameColumn = scanner.column
        let name = scanner.rest.trimmingTrailingWhitespace
        if name.isEmpty {
            error(at: at, "@category needs a name")
        } else if !name.isValidName {
            error(
                at: location(line, nameColumn),
                "invalid category '\(name)' (use letters, digits, '.', '_' and '-')"
            )
        } else {
            category = String(name)
        }
    }

    private mutating func parseRule(_ scanner: inout LineScanner, line: Int) {
        let idLocation = location(line, scanner.column)
        let name = scanner.readWord()
        scanner.skipWhitespace()
        let patternColumn = scanner.column
        let patternText = String(scanner.rest.trimmingTrailingWhitespace)

        switch section {
        case .none:
            error(at: idLocation, "rule '\(name)' is outside any section (add a header such as [block] above it)")
        case .open(let open, let count):
            section = .open(open, ruleCount: count + 1)
        case .broken:
            break
        }
        if !name.isValidName {
            error(at: idLocation, "invalid rule id '\(name)' (use letters, digits, '.', '_' and '-')")
        }
        guard !patternText.isEmpty else {
            error(at: idLocation, "rule '\(name)' has no pattern (expected 'ID PATTERN')")
            return
        }
        let current: Section? = if case .open(let open, _) = section { open } else { nil }
        pending.append(
            PendingRule(
                name: name, patternText: patternText, isCaseInsensitive: current?.isCaseInsensitive ?? true,
                section: current, category: category, line: line, patternColumn: patternColumn,
                idLocation: idLocation))
    }

    /// Reports the pattern's error, or checks the compiled rule and keeps it.
    private mutating func finish(_ rule: PendingRule, _ compiled: Result<Pattern, PatternError>) {
        let pattern: Pattern
        switch compiled {
        case .success(let compiled): pattern = compiled
        case .failure(.invalidPattern(let message, let column)):
            error(at: location(rule.line, rule.patternColumn + column - 1), "invalid pattern: \(message)")
            return
        case .failure(let error):
            self.error(at: location(rule.line, rule.patternColumn), "invalid pattern: \(error)")
            return
        }
        let name = rule.name
        guard let current = rule.section, name.isValidName, rule.category.isValidName else { return }
        if let (template, what) = current.action.captureTemplate, let group = template.highestGroup,
            group > pattern.captureGroupCount
        {
            let groups =
                pattern.captureGroupCount == 1 ? "1 capture group" : "\(pattern.captureGroupCount) capture groups"
            error(
                at: location(rule.line, rule.patternColumn),
                "\(what) uses $\(group) but the pattern of '\(name)' has \(groups)"
            )
            return
        }
        for finding in CanonicalFormCheck.findings(
            in: rule.patternText, field: current.field, isCaseInsensitive: rule.isCaseInsensitive)
        {
            let column =
                rule.patternColumn
                + String(decoding: Array(rule.patternText.utf8)[..<finding.offset], as: UTF8.self).count
            diagnostics.append(Diagnostic(.warning, at: location(rule.line, column), finding.message))
        }
        if let (word, key) = Section.option(startingPattern: rule.patternText) {
            diagnostics.append(
                Diagnostic(
                    .warning, at: location(rule.line, rule.patternColumn),
                    "the pattern of '\(name)' begins with '\(word)', which reads as a section option; options go on "
                        + "the section's header, after the ']' (\(Self.headerHint(current.action, word, key))), and "
                        + "on a rule's line they are part of its pattern"))
        }
        rules.append(
            Rule(
                id: "\(rule.category)/\(name)", category: rule.category, name: String(name), action: current.action,
                pattern: pattern, field: current.field, methods: current.methods, priority: current.priority,
                message: current.message, tags: current.tags, location: rule.idLocation
            )
        )
    }

    /// `[cache] ttl=1h`: the header a section of `action` would have with the option `word` (named
    /// `key`), or the sections that take the option when this one does not.
    private static func headerHint(_ action: RuleAction, _ word: Substring, _ key: String) -> String {
        let keyword = action.keyword
        if Section.cacheOptionNames.contains(key), keyword != "cache" { return "in [cache] sections" }
        if Section.responseOptionNames.contains(key), keyword != "respond" { return "in [respond …] sections" }
        return keyword == "redirect" || keyword == "respond" ? "[\(keyword) …] \(word)" : "[\(keyword)] \(word)"
    }

    private mutating func closeSection() {
        if case .open(let open, let count) = section, count == 0 {
            diagnostics.append(Diagnostic(.warning, at: open.location, "section has no rules"))
        }
        section = .none
    }

    private func location(_ line: Int, _ column: Int) -> SourceLocation {
        SourceLocation(file: source.file, line: line, column: column)
    }

    private mutating func error(at location: SourceLocation, _ message: String) {
        diagnostics.append(Diagnostic(.error, at: location, message))
    }
}
