/// Errors of the audit pipeline.
public enum PipelineError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The audit log could not be opened or written.
    case auditLog(String)
    /// A policy reload found problems; the previous policy stays in force.
    case policyReload(PolicyReloadFailure)

    /// The error for people.
    public var description: String {
        switch self {
        case .auditLog(let reason):
            reason
        case .policyReload(let failure):
            "policy reload from \(failure.directory) failed; the previous policy stays in force:\n"
                + failure.problems.joined(separator: "\n")
        }
    }
}
