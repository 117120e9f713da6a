import AuditPolicy
import Foundation

/// What a replay did.
public struct ReplaySummary: Sendable, Equatable {
    /// Entries evaluated and written.
    public var requests = 0
    /// Entries per verdict.
    public var verdicts: [Verdict.Action: Int] = [:]
    /// Entries that could not be read, skipped.
    public var problems: [ReplayProblem] = []
}

/// Evaluates recorded traffic offline against a policy and writes audit records, the same schema the
/// embedded auditor writes. Nothing is sent to the network.
public struct Replayer: Sendable {
    /// The policy to evaluate with.
    public let policy: Policy
    /// What a failing match does.
    public let onError: MatchErrorHandling
    /// Secrets removed from the records.
    public let redaction: Redaction

    /// Creates a replayer.
    public init(policy: Policy, onError: MatchErrorHandling = .block, redaction: Redaction = .default) {
        self.policy = policy
        self.onError = onError
        self.redaction = redaction
    }

    /// The record for one entry; entries without a time get `defaultTime`.
    public func record(for entry: ReplayEntry, defaultTime: Date) -> AuditRecord {
        let (verdict, nanoseconds) = policy.evaluateTimed(entry.request, onError: onError)
        let snapshot = redaction.snapshot(of: entry.request, bodyBytes: entry.requestBodyBytes)
        let decision = DecisionSnapshot(
            verdict, nanoseconds: nanoseconds, redirect: verdict.redirectTarget.map(redaction.redact(url:))
        )
        let isBlocked = verdict.action == .block
        let outcome = OutcomeSnapshot(
            kind: isBlocked ? .blocked : .replayed, status: isBlocked ? nil : entry.status,
            bytes: isBlocked ? nil : entry.bytes, durationMilliseconds: isBlocked ? 0 : entry.durationMilliseconds ?? 0,
            forwardedURL: isBlocked ? nil : decision.redirect ?? snapshot.url
        )
        return AuditRecord(
            id: UUID(), time: (entry.time ?? defaultTime).roundedToAuditLogPrecision, request: snapshot,
            decision: decision,
            warning: verdict.action == .warn ? WarningResolution(decision: .proceed, decidedBy: .default) : nil,
            outcome: outcome
        )
    }

    /// Replays every file in `paths` in order, appending a record per entry to `writer`; entries
    /// without a time of their own (list lines) get `defaultTime`.
    ///
    /// - Throws: ``AuditLogError`` when an input cannot be read or the log cannot be written.
    public func replay(_ paths: [String], into writer: AuditLogWriter, defaultTime: Date = Date()) throws(AuditLogError)
        -> ReplaySummary
    {
        var summary = ReplaySummary()
        let now = defaultTime
        for path in paths {
            let (entries, problems) = try TrafficReader.read(path: path)
            summary.problems += problems
            for entry in entries {
                let record = record(for: entry, defaultTime: now)
                try writer.append(record)
                summary.requests += 1
                summary.verdicts[record.decision.verdict, default: 0] += 1
            }
        }
        return summary
    }
}
