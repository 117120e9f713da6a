/// Reads `.test` files: one ``PolicyTestCase`` per line, `#` comments and blank lines skipped.
enum PolicyTestFileParser {
    static let syntax = "EXPECT RULE [METHOD] URL [Header:value …] [-> TARGET or STATUS]"

    /// Parses every case in `source`; problems come back as diagnostics, never as skipped lines.
    static func parse(_ source: SourceText) -> (cases: [PolicyTestCase], diagnostics: [Diagnostic]) {
        var cases: [PolicyTestCase] = []
        var diagnostics: [Diagnostic] = []
        for (number, text) in source.numberedLines {
            do {
                if let testCase = try parseLine(text, file: source.file, line: number) { cases.append(testCase) }
            } catch {
                diagnostics.append(error)
            }
        }
        return (cases, diagnostics)
    }

    /// Parses one line; nil for a blank or comment line.
    static func parseLine(_ text: String, file: String, line: Int) throws(Diagnostic) -> PolicyTestCase? {
        var scanner = LineScanner(text)
        var words: [(text: String, column: Int)] = []
        while true {
            scanner.skipWhitespace()
            if scanner.isAtEnd { break }
            let column = scanner.column
            words.append((String(scanner.readWord()), column))
        }
        guard let first = words.first, !first.text.hasPrefix("#") else { return nil }
        func error(_ column: Int, _ message: String) -> Diagnostic {
            Diagnostic(.error, at: SourceLocation(file: file, line: line, column: column), message)
        }
        guard let expectation = PolicyTestCase.Expectation(rawValue: first.text) else {
            let expected = PolicyTestCase.Expectation.allCases.map(\.rawValue).joined(separator: ", ")
            throw error(first.column, "unknown expectation '\(first.text)' (expected \(expected))")
        }
        var rest = words.dropFirst()
        guard let rule = rest.popFirst() else {
            throw error(text.count + 1, "expected a rule id or '-' (line format: \(syntax))")
        }
        var method = "GET"
        if rest.count >= 2, !rest[rest.startIndex].text.contains(":"),
            rest[rest.startIndex].text.allSatisfy(\.isHTTPTokenCharacter)
        {
            method = rest.removeFirst().text
        }
        guard let url = rest.popFirst() else {
            throw error(text.count + 1, "expected a URL (line format: \(syntax))")
        }
        if let problem = SchemeCheck.problem(in: url.text) { throw error(url.column, problem) }
        var headers: [AuditRequest.Header] = []
        while let word = rest.first, word.text != "->" {
            guard let colon = word.text.firstIndex(of: ":"), colon != word.text.startIndex,
                word.text[..<colon].allSatisfy(\.isHTTPTokenCharacter)
            else {
                throw error(word.column, "unexpected '\(word.text)' after the URL (headers are written Name:value)")
            }
            headers.append(
                AuditRequest.Header(
                    name: String(word.text[..<colon]), value: String(word.text[word.text.index(after: colon)...])))
            rest.removeFirst()
        }
        var target: String?
        var status: Int?
        if let arrow = rest.popFirst() {
            switch expectation {
            case .redirect:
                guard let targetWord = rest.popFirst() else {
                    throw error(text.count + 1, "expected a target after '->'")
                }
                target = targetWord.text
            case .respond:
                guard let statusWord = rest.popFirst() else {
                    throw error(text.count + 1, "expected a status after '->'")
                }
                guard let number = Int(statusWord.text), LocalResponder.statuses.contains(number) else {
                    throw error(statusWord.column, "expected a status from 200 to 599, found '\(statusWord.text)'")
                }
                status = number
            default:
                throw error(arrow.column, "only a redirect case takes '-> TARGET' and a respond case '-> STATUS'")
            }
        }
        if let extra = rest.first { throw error(extra.column, "unexpected '\(extra.text)' after the target") }

        switch (expectation, rule.text) {
        case (.pass, let id) where id != "-":
            throw error(rule.column, "a pass case takes '-' as its rule, found '\(id)'")
        case (.record, "-"), (.cache, "-"):
            throw error(rule.column, "a \(expectation.rawValue) case needs a rule id")
        default:
            break
        }
        var testCase = PolicyTestCase(
            expect: expectation, rule: rule.text == "-" ? nil : rule.text, method: method, url: url.text,
            headers: headers, redirectTarget: target, responseStatus: status,
            location: SourceLocation(file: file, line: line, column: first.column)
        )
        testCase.ruleLocation = SourceLocation(file: file, line: line, column: rule.column)
        return testCase
    }
}
