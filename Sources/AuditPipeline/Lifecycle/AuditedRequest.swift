import AuditLocking
import AuditPolicy
import AuditReport
import Foundation

/// A request the pipeline admitted: its decision, what the front-end is to do with it, and the one
/// way it ends, ``finish(_:)``.
///
/// Every admitted request is finished exactly once: a second ``finish(_:)`` is ignored, and a request
/// dropped without one is recorded as `cancelled` when its last reference goes, so no request that was
/// counted and published lacks its record or has two.
///
/// ```swift
/// let audited = pipeline.admit(AuditRequest(method: "GET", url: "https://example.org/"), bodyBytes: nil)
/// switch audited.admission {
/// case .send(let redirectedTo): … send it, then audited.finish(Outcome(.response, status: 200, destination: .asDecided))
/// case .refuse(let refusal): … answer the refusal, then audited.finish(Outcome(refusal.outcomeKind))
/// case .respond(let response): … answer locally, then audited.finish(Outcome(.responded, status: response.status))
/// case .warn: … resolve the warning, which gives send or refuse
/// }
/// ```
public final class AuditedRequest: Sendable {
    /// The decision: the request's id, time, verdict, redacted snapshots and deciding policy.
    public let decision: AuditPipeline.Decision
    /// What to do with the request, as admitted (``Admission/warn`` stays `warn` once resolved: the
    /// resolution returns what to do).
    public let admission: Admission
    private let pipeline: AuditPipeline
    private let state = Locked(State())

    private struct State {
        var warning: WarningResolution?
        var isFinished = false
    }

    init(decision: AuditPipeline.Decision, admission: Admission, pipeline: AuditPipeline) {
        self.decision = decision
        self.admission = admission
        self.pipeline = pipeline
    }

    deinit {
        // The last reference is gone: nothing else can read or change the state now.
        let state = state.withLock { $0 }
        guard !state.isFinished else { return }
        pipeline.record(
            decision, warning: state.warning,
            outcome: Outcome(
                .cancelled,
                failure: .init(
                    domain: "RequestAudit", code: 0, description: "the request ended without an outcome")))
    }

    /// The request's id (in its events, its record, and a proxy's denial).
    public var id: UUID { decision.id }

    /// The verdict.
    public var verdict: Verdict { decision.verdict }

    /// How a warning was resolved, once it was.
    public var warning: WarningResolution? { state.withLock { $0.warning } }

    // MARK: Warnings

    /// Resolves a `warn` admission by asking the configured warning handler (when `askHandler`), or by
    /// ``PipelineConfiguration/defaultWarningDecision``: `send`, or `refuse` with
    /// ``Refusal/Reason/warningDeclined``.
    public func resolveWarning(askHandler: Bool = true) async -> Admission {
        resolved(by: await pipeline.resolveWarning(decision, askHandler: askHandler))
    }

    /// Resolves a `warn` admission at once, for a front-end whose client cannot answer a dialog (the
    /// proxy): proceeds when the client acknowledged the deciding rule (`acknowledgements` holds rule
    /// ids), otherwise as `fallback` says (by default ``PipelineConfiguration/defaultWarningDecision``).
    public func resolveWarning(
        acknowledgements: some Sequence<String>, fallback: WarningResolution.Decision? = nil
    ) -> Admission {
        resolved(by: pipeline.resolveWarning(decision, acknowledgements: acknowledgements, fallback: fallback))
    }

    private func resolved(by resolution: WarningResolution) -> Admission {
        state.withLock { $0.warning = resolution }
        guard resolution.decision == .proceed else { return .refuse(pipeline.refusal(.warningDeclined, of: decision)) }
        return .send(redirectedTo: nil)
    }

    // MARK: Responding

    /// The local response of a `respond` admission: the rule's body or file, or what its handler
    /// returns for `request` (the request as made, not redacted) and `body`.
    ///
    /// - Throws: ``PipelineError/responseHandlerMissing(handler:rule:)`` when no handler has the
    ///   name, ``PipelineError/responseHandlerFailed(handler:rule:reason:)`` when it throws.
    public func localResponse(for request: AuditRequest, body: Data?) async throws(PipelineError) -> HandlerResponse {
        try await pipeline.response(for: decision, request: request, body: body)
    }

    // MARK: The end

    /// Ends the request: its record is made from `outcome` (redacted, timed since admission unless
    /// the outcome says otherwise), published as ``AuditEvent/finished(_:)``, exported and logged, on
    /// the pipeline's bookkeeping queue within a few milliseconds (``AuditPipeline/waitUntilIdle()``
    /// waits for it). Call it once; a second call is ignored.
    public func finish(_ outcome: Outcome) {
        let (isFirst, warning) = state.withLock { state in
            defer { state.isFinished = true }
            return (!state.isFinished, state.warning)
        }
        guard isFirst else { return }
        pipeline.record(decision, warning: warning, outcome: outcome)
    }
}
