/// Errors of the audit pipeline.
public enum PipelineError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The audit log could not be opened or written.
    case auditLog(String)
    /// A policy reload found problems; the previous policy stays in force.
    case policyReload(PolicyReloadFailure)
    /// A `respond` rule names a handler that is not in ``PipelineConfiguration/responseHandlers``.
    case responseHandlerMissing(handler: String, rule: String)
    /// A response handler threw.
    case responseHandlerFailed(handler: String, rule: String, reason: String)

    /// The error for people.
    public var description: String {
        switch self {
        case .auditLog(let reason):
            reason
        case .policyReload(let failure):
            "policy reload from \(failure.directory) failed; the previous policy stays in force:\n"
                + failure.problems.joined(separator: "\n")
        case .responseHandlerMissing(let handler, let rule):
            "rule \(rule) responds with handler '\(handler)', which is not registered"
        case .responseHandlerFailed(let handler, let rule, let reason):
            "response handler '\(handler)' of rule \(rule) failed: \(reason)"
        }
    }
}
