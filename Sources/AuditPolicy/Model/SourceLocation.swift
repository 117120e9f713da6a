/// A position in a file the user wrote: the path as given, a 1-based line and a 1-based column.
///
/// Columns count characters, so a message points at the same place an editor shows.
public struct SourceLocation: Sendable, Hashable, Comparable, Codable, CustomStringConvertible {
    /// The file's path as the user typed it (or as found under the directory they named).
    public let file: String
    /// 1-based line number.
    public let line: Int
    /// 1-based character column.
    public let column: Int

    /// Creates a location.
    public init(file: String, line: Int, column: Int) {
        self.file = file
        self.line = line
        self.column = column
    }

    /// `file:line:column`, the form compilers and editors understand.
    public var description: String { "\(file):\(line):\(column)" }

    /// Orders by file, then line, then column.
    public static func < (lhs: SourceLocation, rhs: SourceLocation) -> Bool {
        (lhs.file, lhs.line, lhs.column) < (rhs.file, rhs.line, rhs.column)
    }
}
