import Foundation

/// Where JSON text stops parsing and why, for messages that point at the spot
/// (`file:line:column: error: not valid JSON: invalid value`).
struct JSONSyntaxError: Sendable, Equatable, CustomStringConvertible {
    /// 1-based line of the text.
    let line: Int
    /// 1-based column on that line, in characters.
    let column: Int
    /// What the parser found there, as Foundation words it (`invalid value`, `unexpected end of file`).
    let reason: String

    /// `line:column: reason`.
    var description: String { "\(line):\(column): \(reason)" }

    /// The first syntax error of `data`, or `nil` when it is JSON.
    init?(in data: Data) {
        let parsingError: NSError
        do {
            _ = try JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])
            return nil
        } catch {
            parsingError = error as NSError
        }
        let text = parsingError.userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(parsingError)"
        self.init(at: Self.offset(in: text, length: data.count), of: data, reason: Self.reason(in: text))
    }

    /// `line` and `column` of byte `offset` in `data`.
    private init(at offset: Int, of data: Data, reason: String) {
        let before = data.prefix(min(max(offset, 0), data.count))
        let lineStart = before.lastIndex(of: UInt8(ascii: "\n")).map { before.index(after: $0) } ?? before.startIndex
        line = before.count { $0 == UInt8(ascii: "\n") } + 1
        column = String(decoding: before[lineStart...], as: UTF8.self).count + 1
        self.reason = reason
    }

    /// The byte offset Foundation names (`… around character 70.`); the end of the text for an
    /// unexpected end.
    private static func offset(in text: String, length: Int) -> Int {
        guard let range = text.range(of: " around character ") else { return length }
        return Int(text[range.upperBound...].prefix { $0.isNumber }) ?? length
    }

    /// Foundation's words without the offset and the full stop, the first letter lower-cased.
    private static func reason(in text: String) -> String {
        var words = text.range(of: " around character ").map { String(text[..<$0.lowerBound]) } ?? text
        if words.hasSuffix(".") { words.removeLast() }
        words = words.replacingOccurrences(of: " during JSON parse", with: "")
        return words.prefix(1).lowercased() + words.dropFirst()
    }
}
