import Foundation

/// Why a recording cannot be written or read.
public enum RecordingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file cannot be read or written.
    case cannotOpen(path: String, reason: String)
    /// The file is not JSON: where it stops parsing and why.
    case invalidJSON(path: String, line: Int, column: Int, reason: String)
    /// The file holds JSON other than a HAR document.
    case notHAR(path: String)
    /// Entries of the HAR lack what a replay needs, each problem as `entry N: what is wrong`.
    case invalidEntries(path: String, problems: [String])

    /// The error for `data`, read from `path`, that is not a HAR document.
    static func notHAR(_ data: Data, path: String) -> RecordingError {
        guard let syntax = JSONSyntaxError(in: data) else { return .notHAR(path: path) }
        return .invalidJSON(path: path, line: syntax.line, column: syntax.column, reason: syntax.reason)
    }

    /// A message naming the file and what is wrong.
    public var description: String {
        switch self {
        case .cannotOpen(let path, let reason): "cannot open the recording \(path): \(reason)"
        case .invalidJSON(let path, let line, let column, let reason):
            "\(path):\(line):\(column): error: not valid JSON: \(reason)"
        case .notHAR(let path): "\(path) is not a HAR file (it has no log.entries)"
        case .invalidEntries(let path, let problems): problems.map { "\(path): \($0)" }.joined(separator: "\n")
        }
    }
}
