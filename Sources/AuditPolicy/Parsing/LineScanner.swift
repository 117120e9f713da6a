/// Reads one line left to right, knowing the 1-based character column of where it is.
struct LineScanner {
    let text: String
    private(set) var index: String.Index
    private(set) var column: Int

    init(_ text: String) {
        self.text = text
        self.index = text.startIndex
        self.column = 1
    }

    var isAtEnd: Bool { index == text.endIndex }
    var current: Character? { isAtEnd ? nil : text[index] }
    var rest: Substring { text[index...] }

    mutating func advance() {
        index = text.index(after: index)
        column += 1
    }

    mutating func skipWhitespace() {
        while let character = current, character == " " || character == "\t" { advance() }
    }

    /// Reads up to the next space, tab or `stop` character (exclusive).
    mutating func readWord(stoppingAt stop: Set<Character> = []) -> Substring {
        let start = index
        while let character = current, character != " ", character != "\t", !stop.contains(character) { advance() }
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
        var end = endIndex
        while end > startIndex, [" ", "\t"].contains(self[index(before: end)]) { end = index(before: end) }
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
