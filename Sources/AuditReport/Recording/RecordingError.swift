/// Why a recording cannot be written or read.
public enum RecordingError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The file cannot be read or written.
    case cannotOpen(path: String, reason: String)
    /// The file holds something other than a HAR document.
    case notHAR(path: String)
    /// Entries of the HAR lack what a replay needs, each problem as `entry N: what is wrong`.
    case invalidEntries(path: String, problems: [String])

    /// A message naming the file and what is wrong.
    public var description: String {
        switch self {
        case .cannotOpen(let path, let reason): "cannot open the recording \(path): \(reason)"
        case .notHAR(let path): "\(path) is not a HAR file (it has no log.entries)"
        case .invalidEntries(let path, let problems): problems.map { "\(path): \($0)" }.joined(separator: "\n")
        }
    }
}
