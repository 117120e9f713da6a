import ArgumentParser
import AuditPolicy
import AuditReport
import Foundation

/// `audit check`: print the verdict for each URL.
struct CheckCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check",
        abstract: "Print the verdict of the policy for each URL.",
        discussion: """
            Without URL arguments, reads one request per line from standard input: 'URL' or 'METHOD URL'
            ('#' comments and blank lines skipped); a line that is neither is reported at its line and
            column on standard error, and the exit status is 1. A URL must have a scheme (https://…).
            Each line of output is: VERDICT METHOD URL, then rule=, message=, redirect=, recorded= and
            errors= where they apply. With --json, one JSON object per line with the keys url, method,
            verdict, rule, message, redirect, recorded and errors.
            With --explain, each request is followed by the canonical form of its URL, which is what
            every rule sees, and what canonicalizing changed (or why the URL is invalid); with --json,
            the keys canonical, changes and invalid are added.
            """
    )

    @Option(name: .long, help: "The folder of .rules files.")
    var policies = "policies"

    @Option(name: .long, help: "The HTTP method of the requests.")
    var method = "GET"

    @Option(name: [.customShort("H"), .long], help: "A request header, 'Name: value' (repeatable).")
    var header: [String] = []

    @Flag(name: .long, help: "Print one JSON object per line.")
    var json = false

    @Flag(name: .long, help: "Show the canonical URL the rules see and what changed.")
    var explain = false

    @Option(name: .customLong("on-error"), help: "When a match fails: block (fail closed) or pass (ignore the rule).")
    var onError = MatchErrorHandling.block

    @Argument(help: "The URLs to check.")
    var urls: [String] = []

    mutating func validate() throws {
        // As the URL Standard reads a URL, and as lines of standard input are read: leading and
        // trailing spaces and control characters (a pasted line's, a quoted argument's) are not part of it.
        urls = urls.map { $0.trimmingCharacters(in: Self.surrounding) }
        guard !method.isEmpty, method.allSatisfy({ $0.isLetter || $0 == "-" }) else {
            throw ValidationError("invalid method '\(method)'")
        }
        _ = try headers()
        if let problem = urls.lazy.compactMap(SchemeCheck.problem(in:)).first {
            throw ValidationError(problem)
        }
    }

    /// What surrounds a URL without being part of it: C0 controls and space.
    private static let surrounding = CharacterSet(charactersIn: Unicode.Scalar(0)...Unicode.Scalar(0x20))

    func headers() throws -> [AuditRequest.Header] {
        try header.map { text in
            guard let colon = text.firstIndex(of: ":"), colon != text.startIndex else {
                throw ValidationError("invalid header '\(text)' (expected 'Name: value')")
            }
            let value = text[text.index(after: colon)...].drop { $0 == " " }
            return AuditRequest.Header(name: String(text[..<colon]), value: String(value))
        }
    }

    func run() throws {
        let policy = try loadPolicy(directory: policies, option: "--policies DIR")
        let headers = try headers()
        var requests = urls.map { AuditRequest(method: method, url: $0, headers: headers) }
        var problems: [ReplayProblem] = []
        if urls.isEmpty {
            let input = FileHandle.standardInput.readDataToEndOfFile()
            let list = TrafficReader.requestList(input, name: "<stdin>", defaultMethod: method)
            requests = list.requests.map { AuditRequest(method: $0.method, url: $0.url, headers: headers) }
            problems = list.problems
        }
        for request in requests {
            let verdict = policy.evaluate(request, onError: onError)
            if json {
                var record = CheckRecord(request, verdict)
                if explain { record.addExplanation(of: request) }
                CommandOutput.line(try record.jsonLine())
            } else {
                CommandOutput.line(Self.textLine(request, verdict))
                if explain { CommandOutput.line(Self.explanation(of: request)) }
            }
        }
        for problem in problems { CommandOutput.errorLine(problem.description) }
        if !problems.isEmpty { throw ExitCode.failure }
    }

    /// `  canonical: URL` and `  changed: …` (or `  invalid: why`), for `--explain`.
    static func explanation(of request: AuditRequest) -> String {
        switch request.canonicalURL {
        case .success(let url):
            "  canonical: \(url.string)\n  changed:   \(url.changes)"
        case .failure(let rejection):
            "  invalid:   \(rejection.reason)"
        }
    }

    static func textLine(_ request: AuditRequest, _ verdict: Verdict) -> String {
        var line =
            "\(verdict.action.rawValue.padding(toLength: 8, withPad: " ", startingAt: 0)) \(request.method) \(request.url)"
        if let rule = verdict.rule { line += "  rule=\(rule.id)" }
        if let message = verdict.message { line += "  message=\(quoted(message))" }
        if let target = verdict.redirectTarget { line += "  redirect=\(target)" }
        if let response = verdict.response {
            if let handler = response.handler {
                line += "  handler=\(handler)"
            } else {
                line += "  status=\(response.status ?? 200)"
                if let type = response.contentType { line += "  type=\(quoted(type))" }
                line += "  bytes=\(response.body.count)"
            }
        }
        if !verdict.recorded.isEmpty { line += "  recorded=\(verdict.recorded.map(\.id).joined(separator: ","))" }
        if let cacheRule = verdict.cacheRule { line += "  cache=\(cacheRule.id)" }
        if !verdict.errors.isEmpty {
            line += "  errors=\(quoted(verdict.errors.map(\.description).joined(separator: "; ")))"
        }
        return line
    }

    private static func quoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }
}

/// One line of `audit check --json`: keys in a fixed order, absent values as `null`.
struct CheckRecord {
    /// A member's value: an encodable value, or an object whose keys keep their order.
    enum Value {
        case value(any Encodable)
        case object(CheckRecord?)
    }

    private(set) var fields: [(key: String, value: Value)]

    /// Adds `canonical`, `changes` and `invalid` for `--explain`.
    mutating func addExplanation(of request: AuditRequest) {
        switch request.canonicalURL {
        case .success(let url):
            fields += [
                ("canonical", .value(url.string)), ("changes", .value(url.changes.phrases)),
                ("invalid", .value(String?.none)),
            ]
        case .failure(let rejection):
            fields += [
                ("canonical", .value(String?.none)), ("changes", .value([String]())),
                ("invalid", .value(rejection.reason)),
            ]
        }
    }

    init(_ request: AuditRequest, _ verdict: Verdict) {
        fields = [
            ("url", .value(request.url)),
            ("method", .value(request.method)),
            ("verdict", .value(verdict.action.rawValue)),
            ("rule", .value(verdict.rule?.id)),
            ("message", .value(verdict.message)),
            ("redirect", .value(verdict.redirectTarget)),
            ("response", .object(verdict.response.map(Self.responseObject))),
            ("recorded", .value(verdict.recorded.map(\.id))),
            ("cache", .value(verdict.cacheRule?.id)),
            ("errors", .value(verdict.errors.map(\.description))),
        ]
    }

    /// The `response` key: what a `respond` rule answers (`null` status, type and bytes for a
    /// handler's, which only the handler knows).
    static func responseObject(_ response: LocalResponse) -> CheckRecord {
        CheckRecord(fields: [
            ("status", .value(response.status)),
            ("type", .value(response.contentType)),
            ("bytes", .value(response.handler == nil ? response.body.count : nil)),
            ("handler", .value(response.handler)),
        ])
    }

    private init(fields: [(key: String, value: Value)]) {
        self.fields = fields
    }

    func jsonLine() throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        let members = try fields.map { field in
            let key = String(decoding: try encoder.encode(field.key), as: UTF8.self)
            let value =
                switch field.value {
                case .value(let value): String(decoding: try encoder.encode(value), as: UTF8.self)
                case .object(let object): try object?.jsonLine() ?? "null"
                }
            return "\(key):\(value)"
        }
        return "{" + members.joined(separator: ",") + "}"
    }
}
