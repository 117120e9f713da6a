import AuditPolicy
import Foundation

/// Reads request lists: one request per line, `URL` or `METHOD URL`; `#` comments and blank lines
/// are skipped.
///
/// Lines are split on their UTF-8 bytes (spaces and tabs are ASCII), so a list of a hundred
/// thousand URLs reads in a few milliseconds; columns in messages count characters.
enum RequestListReader {
    /// The entries of `data` and the problems of its lines that are not requests. A line without a
    /// method gets `defaultMethod`. With `anyScheme`, a URL of any scheme (`app://`) is read, as a
    /// policy may decide custom schemes; without, only `http` and `https` URLs are.
    static func read(
        _ data: Data, file: String, defaultMethod: String = "GET", anyScheme: Bool = false
    ) -> (entries: [ReplayEntry], problems: [ReplayProblem]) {
        var entries: [ReplayEntry] = []
        var problems: [ReplayProblem] = []
        let bytes = [UInt8](data)
        var lineNumber = 0
        var lineStart = 0
        while lineStart <= bytes.count {
            let lineEnd = bytes[lineStart...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
            lineNumber += 1
            defer { lineStart = lineEnd + 1 }
            var end = lineEnd
            if end > lineStart, bytes[end - 1] == UInt8(ascii: "\r") { end -= 1 }
            if lineEnd == bytes.count, lineStart == lineEnd { break }
            read(
                bytes[lineStart..<end], at: "\(file):\(lineNumber)", defaultMethod: defaultMethod, anyScheme: anyScheme,
                entries: &entries, problems: &problems)
        }
        return (entries, problems)
    }

    /// The words of `line`: byte ranges (indices of `line`) between spaces and tabs.
    private static func words(_ line: ArraySlice<UInt8>) -> [Range<Int>] {
        var words: [Range<Int>] = []
        var start: Int?
        for index in line.indices {
            let byte = line[index]
            if byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") {
                if let begin = start { words.append(begin..<index) }
                start = nil
            } else if start == nil {
                start = index
            }
        }
        if let begin = start { words.append(begin..<line.endIndex) }
        return words
    }

    private static func read(
        _ line: ArraySlice<UInt8>, at position: String, defaultMethod: String, anyScheme: Bool,
        entries: inout [ReplayEntry], problems: inout [ReplayProblem]
    ) {
        let words = words(line)
        guard let first = words.first, line[first.lowerBound] != UInt8(ascii: "#") else { return }
        func text(_ range: Range<Int>) -> String {
            String(decoding: line[range], as: UTF8.self)
        }
        // Characters before the word, plus one: UTF-8 bytes that start a scalar.
        func column(_ range: Range<Int>) -> Int {
            line[line.startIndex..<range.lowerBound].count { $0 & 0xC0 != 0x80 } + 1
        }
        let methodRange: Range<Int>?
        let urlRange: Range<Int>
        switch words.count {
        case 1: (methodRange, urlRange) = (nil, first)
        case 2: (methodRange, urlRange) = (first, words[1])
        default:
            problems.append(
                ReplayProblem(
                    position: "\(position):\(column(words[2]))",
                    message: "unexpected '\(text(words[2]))' (expected '[METHOD] URL')"))
            return
        }
        if let methodRange {
            let isMethod = line[methodRange].allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) || byte == UInt8(ascii: "-")
            }
            guard isMethod else {
                problems.append(
                    ReplayProblem(
                        position: "\(position):\(column(methodRange))", message: "invalid method '\(text(methodRange))'"
                    ))
                return
            }
        }
        let url = text(urlRange)
        let problem =
            anyScheme
            ? SchemeCheck.problem(in: url) : isAbsoluteHTTPURL(url) ? nil : "'\(url)' is not an absolute http(s) URL"
        if let problem {
            problems.append(ReplayProblem(position: "\(position):\(column(urlRange))", message: problem))
            return
        }
        let method = methodRange.map(text) ?? defaultMethod
        entries.append(ReplayEntry(request: AuditRequest(method: method, url: url), position: position))
    }

    /// `http://` or `https://` (any case) followed by a host.
    static func isAbsoluteHTTPURL(_ text: String) -> Bool {
        let bytes = text.utf8
        for scheme in ["http://", "https://"] {
            guard bytes.count > scheme.utf8.count else { continue }
            let matches = zip(bytes, scheme.utf8).allSatisfy { $0 | 0x20 == $1 }
            if matches { return !AuditRequest(url: text).host.isEmpty }
        }
        return false
    }
}
