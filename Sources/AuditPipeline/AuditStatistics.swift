import AuditLocking
import AuditPolicy
import AuditReport

/// Counters of an auditor since it was created: a value snapshot.
public struct AuditStatistics: Sendable, Equatable {
    /// Requests decided.
    public var requests = 0
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

    mutating func count(_ decision: DecisionSnapshot) {
        requests += 1
        verdicts[decision.verdict, default: 0] += 1
        if let rule = decision.rule { decidedByRule[rule, default: 0] += 1 }
        for (rule, category) in zip(decision.recorded, decision.recordedCategories) {
            recordedByRule[rule, default: 0] += 1
            recordedByCategory[category, default: 0] += 1
        }
    }
}
