import AuditPolicy
import AuditReport
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

/// The `audit replay` front-end: evaluates recorded traffic offline through the audit pipeline,
/// which writes the same records the embedded auditor and the proxy write. Nothing is sent to the
/// network.
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

    /// What the pipeline is told happened to a replayed entry: refused entries were not sent;
    /// entries a rule answers locally get that response's status and size (a handler's are unknown
    /// offline); the others keep the recording's status, size and duration, when it has them.
    static func outcome(of entry: ReplayEntry, _ admission: Admission) -> Outcome {
        switch admission {
        case .refuse(let refusal):
            return Outcome(refusal.outcomeKind, durationMilliseconds: 0)
        case .respond(let response):
            return Outcome(
                .responded, status: response.status, bytes: response.handler == nil ? response.body.count : nil,
                durationMilliseconds: 0)
        case .send, .warn:
            return Outcome(
                .replayed, status: entry.status, bytes: entry.bytes, destination: .asDecided,
                durationMilliseconds: entry.durationMilliseconds ?? 0)
        }
    }

    /// Replays every file in `paths` (HAR files, audit logs, request lists) in order, appending a
    /// record per entry to `writer`; entries without a time of their own (list lines) get
    /// `defaultTime`. A `warn` verdict proceeds, as recorded traffic did.
    ///
    /// - Throws: ``AuditLogError`` when an input cannot be read or the log cannot be written.
    public func replay(_ paths: [String], into writer: AuditLogWriter, defaultTime: Date = Date())
        throws(AuditLogError) -> ReplaySummary
    {
        var configuration = PipelineConfiguration()
        configuration.onMatchError = onError
        configuration.redaction = redaction
        configuration.defaultWarningDecision = .proceed
        let pipeline: AuditPipeline
        do {
            pipeline = try AuditPipeline(policy: policy, configuration: configuration, log: writer)
        } catch {
            throw .writeFailed(path: "the audit log", reason: error.description)
        }
        var summary = ReplaySummary()
        for path in paths {
            let problems = try TrafficReader.forEachEntry(path: path) { entry in
                let audited = pipeline.admit(
                    entry.request, bodyBytes: entry.requestBodyBytes, at: entry.time ?? defaultTime)
                // Recorded traffic went out: a warning proceeds.
                let admission =
                    audited.admission == .warn
                    ? audited.resolveWarning(acknowledgements: [], fallback: .proceed) : audited.admission
                audited.finish(Self.outcome(of: entry, admission))
                summary.requests += 1
                summary.verdicts[audited.verdict.action, default: 0] += 1
            }
            summary.problems += problems
        }
        // Every record handed to the log, in order; a write that failed says so.
        pipeline.recordFinishedNow()
        if let error = writer.lastError { throw error }
        return summary
    }
}
