import AuditLocking
import AuditPolicy
import AuditReport

/// Counters of an auditor since it was created: a value snapshot.
public struct AuditStatistics: Sendable, Equatable {
    /// Requests decided.
    public var requests = 0
    /// Of those, CONNECTs whose tunnel was intercepted (its TLS terminated) and carried requests:
    /// each request inside is decided, and counted, on its own. A tunnel whose handshake failed is
    /// not one of them.
    public var interceptedTunnels = 0
    /// Requests per verdict.
    public var verdicts: [Verdict.Action: Int] = [:]
    /// Matches per `record` rule (full id).
    public var recordedByRule: [String: Int] = [:]
    /// Matches of `record` rules per category.
    public var recordedByCategory: [String: Int] = [:]
    /// Requests per deciding rule (full id).
    public var decidedByRule: [String: Int] = [:]
    /// Policy reloads that put a new policy in force.
    public var reloads = 0
    /// Policy reloads that failed (the previous policy stayed in force).
    public var failedReloads = 0

    /// Empty counters.
    public init() {}

    mutating func count(_ verdict: Verdict) {
        requests += 1
        verdicts[verdict.action, default: 0] += 1
        if let rule = verdict.rule { decidedByRule[rule.id, default: 0] += 1 }
        for rule in verdict.recorded {
            recordedByRule[rule.id, default: 0] += 1
            recordedByCategory[rule.category, default: 0] += 1
        }
    }
}
