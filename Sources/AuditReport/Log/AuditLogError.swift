/// Why the audit log could not be opened, written or read.
public enum AuditLogError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The log file could not be created or opened.
    case cannotOpen(path: String, reason: String)
    /// A file of recorded traffic (a HAR file, a request list) could not be read.
    case cannotReadTraffic(path: String, reason: String)
    /// A write or rotation failed; records from then on are kept in memory and retried.
    case writeFailed(path: String, reason: String)
    /// The writer was shut down; nothing more can be appended.
    case closed(path: String)
    /// A file given as a `summary.json` is not one (`audit report --merge`).
    case invalidSummary(path: String, reason: String)

    /// The error for people.
    public var description: String {
        switch self {
        case .cannotOpen(let path, let reason): "\(path): cannot open the audit log: \(reason)"
        case .cannotReadTraffic(let path, let reason): "\(path): cannot read the traffic file: \(reason)"
        case .writeFailed(let path, let reason): "\(path): cannot write the audit log: \(reason)"
        case .closed(let path): "\(path): the audit log is closed"
        case .invalidSummary(let path, let reason): "\(path): not a summary.json: \(reason)"
        }
    }
}
