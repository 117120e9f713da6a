/// Reads one line left to right, knowing the 1-based character column of where it is.
///
/// A line of ASCII text (nearly every rule line) is stepped through byte by byte, where one byte
/// is one character; other lines go by `Character`, so columns count what an editor shows.
struct LineScanner {
    let text: String
    private(set) var index: String.Index
    private(set) var column: Int
    private let isASCII: Bool

    init(_ text: String) {
        self.text = text
        self.index = text.startIndex
        self.column = 1
        self.isASCII = text.utf8.allSatisfy { $0 < 0x80 }
    }

    var isAtEnd: Bool { index == text.endIndex }
    var current: Character? {
        guard !isAtEnd else { return nil }
        return isASCII ? Character(Unicode.Scalar(text.utf8[index])) : text[index]
    }
    var rest: Substring { text[index...] }

    mutating func advance() {
        index = isASCII ? text.utf8.index(after: index) : text.index(after: index)
        column += 1
    }

    mutating func skipWhitespace() {
        guard isASCII else {
            while let character = current, character == " " || character == "\t" { advance() }
            return
        }
        while !isAtEnd, text.utf8[index] == UInt8(ascii: " ") || text.utf8[index] == UInt8(ascii: "\t") { advance() }
    }

    /// Reads up to the next space, tab or `stop` character (exclusive).
    mutating func readWord(stoppingAt stop: Set<Character> = []) -> Substring {
        let start = index
        if isASCII {
            while !isAtEnd {
                let byte = text.utf8[index]
                guard byte != UInt8(ascii: " "), byte != UInt8(ascii: "\t"),
                    stop.isEmpty || !stop.contains(Character(Unicode.Scalar(byte)))
                else { break }
                advance()
            }
        } else {
            while let character = current, character != " ", character != "\t", !stop.contains(character) {
                advance()
            }
        }
        return text[start..<index]
    }

    /// Moves to `target`, which must be at or after the current index.
    mutating func move(to target: String.Index) {
        while index < target { advance() }
    }
}

extension Substring {
    /// The text without trailing spaces and tabs.
    var trimmingTrailingWhitespace: Substring {
        // Spaces and tabs are single bytes that never belong to a longer character.
        var end = utf8.endIndex
        while end > startIndex {
            let before = utf8.index(before: end)
            guard utf8[before] == UInt8(ascii: " ") || utf8[before] == UInt8(ascii: "\t") else { break }
            end = before
        }
        return self[startIndex..<end]
    }
}

extension StringProtocol {
    /// Whether the text is a valid rule id or category: letters, digits, `.`, `_`, `-`, starting
    /// with a letter or digit.
    var isValidName: Bool {
        func isLetterOrDigit(_ byte: UInt8) -> Bool {
            (byte | 0x20) &- UInt8(ascii: "a") < 26 || byte &- UInt8(ascii: "0") < 10
        }
        guard let first = utf8.first, isLetterOrDigit(first) else { return false }
        return utf8.allSatisfy {
            isLetterOrDigit($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "_") || $0 == UInt8(ascii: "-")
        }
    }
}
