import AuditPolicy
import Foundation

/// Reads request lists: one request per line, `URL` or `METHOD URL`; `#` comments and blank lines
/// are skipped.
enum RequestListReader {
    static func read(_ data: Data, file: String) -> (entries: [ReplayEntry], problems: [ReplayProblem]) {
        var entries: [ReplayEntry] = []
        var problems: [ReplayProblem] = []
        let text = String(decoding: data, as: UTF8.self)
        for (index, rawLine) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = rawLine.hasSuffix("\r") ? rawLine.dropLast() : rawLine
            let position = "\(file):\(index + 1)"
            var words: [(text: Substring, column: Int)] = []
            var column = 1
            var start: Substring.Index?
            var startColumn = 1
            for (offset, character) in zip(line.indices, line) {
                if character == " " || character == "\t" {
                    if let begin = start { words.append((line[begin..<offset], startColumn)) }
                    start = nil
                } else if start == nil {
                    start = offset
                    startColumn = column
                }
                column += 1
            }
            if let begin = start { words.append((line[begin...], startColumn)) }
            guard let first = words.first, !first.text.hasPrefix("#") else { continue }
            let (method, url): (Substring, (text: Substring, column: Int))
            switch words.count {
            case 1: (method, url) = ("GET", first)
            case 2: (method, url) = (first.text, words[1])
            default:
                problems.append(
                    ReplayProblem(
                        position: "\(position):\(words[2].column)",
                        message: "unexpected '\(words[2].text)' (expected '[METHOD] URL')")
                )
                continue
            }
            guard method.allSatisfy({ $0.isLetter || $0 == "-" }) else {
                problems.append(
                    ReplayProblem(position: "\(position):\(first.column)", message: "invalid method '\(method)'"))
                continue
            }
            guard isAbsoluteHTTPURL(String(url.text)) else {
                problems.append(
                    ReplayProblem(
                        position: "\(position):\(url.column)", message: "'\(url.text)' is not an absolute http(s) URL")
                )
                continue
            }
            entries.append(
                ReplayEntry(request: AuditRequest(method: String(method), url: String(url.text)), position: position))
        }
        return (entries, problems)
    }

    /// `http://` or `https://` followed by a host.
    static func isAbsoluteHTTPURL(_ text: String) -> Bool {
        let lower = text.lowercased()
        for scheme in ["http://", "https://"] where lower.hasPrefix(scheme) {
            return !AuditRequest(url: text).host.isEmpty
        }
        return false
    }
}
