/// A policy or test file decoded into lines, or the diagnostic saying why it cannot be read as text.
///
/// A UTF-8 byte-order mark is skipped, and `\r\n` line endings read as `\n`.
struct SourceText {
    let file: String
    let lines: [String]

    /// Decodes `bytes`; an ill-formed UTF-8 sequence is an error at its line and column.
    init(file: String, bytes: [UInt8]) throws(Diagnostic) {
        self.file = file
        var body = bytes[...]
        if body.starts(with: [0xEF, 0xBB, 0xBF]) { body = body.dropFirst(3) }
        var lines: [String] = []
        for (index, rawLine) in body.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated()
        {
            var line = rawLine
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            guard let text = String(validating: line, as: UTF8.self) else {
                throw Self.invalidUTF8(in: line, file: file, line: index + 1)
            }
            lines.append(text)
        }
        if lines.last == "" { lines.removeLast() }
        self.lines = lines
    }

    /// The lines with their 1-based numbers.
    var numberedLines: some Sequence<(number: Int, text: String)> {
        lines.enumerated().lazy.map { (number: $0.offset + 1, text: $0.element) }
    }

    private static func invalidUTF8(in line: ArraySlice<UInt8>, file: String, line number: Int) -> Diagnostic {
        // Find the longest valid prefix: the column is the character after it.
        var validEnd = line.startIndex
        var iterator = line.makeIterator()
        var decoder = UTF8()
        var offset = line.startIndex
        loop: while true {
            switch decoder.decode(&iterator) {
            case .scalarValue(let scalar):
                offset += UTF8.width(scalar)
                validEnd = offset
            case .emptyInput, .error:
                break loop
            }
        }
        let column = String(decoding: line[line.startIndex..<validEnd], as: UTF8.self).count + 1
        let byte = validEnd < line.endIndex ? line[validEnd] : 0
        let hex = String(byte, radix: 16, uppercase: true)
        return Diagnostic(
            .error, at: SourceLocation(file: file, line: number, column: column),
            "file is not valid UTF-8 (byte 0x\(hex.count == 1 ? "0" + hex : hex))"
        )
    }
}
