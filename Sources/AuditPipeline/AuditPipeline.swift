import AuditLocking
import AuditPolicy
import AuditReport
import Foundation

/// The one audit pipeline every front-end hands its requests to: decide → warn → (the front-end
/// sends, refuses or responds) → record → events → statistics → log; and policy reloads.
///
/// A front-end is a transport adapter: the in-app `RequestInfoProtocol`, `audit proxy` and
/// `audit replay` each turn what they see into an `AuditRequest`, ask ``decide(_:bodyBytes:at:)``,
/// carry out the verdict in their own transport, and end with ``finish(_:warning:outcome:)``. None
/// of them builds records, counts statistics or publishes events itself.
///
/// ```swift
/// let pipeline = try AuditPipeline(policy: Policy(directory: "policies"))
/// let decision = pipeline.decide(AuditRequest(method: "GET", url: "https://example.org/"), bodyBytes: nil)
/// // … send it, or refuse it, as decision.verdict says …
/// try pipeline.finish(decision, warning: nil, outcome: OutcomeSnapshot(kind: .response, status: 200))
/// try await pipeline.shutdown()
/// ```
public final class AuditPipeline: Sendable {
    /// The behaviour settings.
    public let configuration: PipelineConfiguration
    /// The policy in force now; ``reloadPolicy(from:)`` replaces it.
    ///
    /// Each request is decided by the policy in force when it starts, and keeps that policy (in its
    /// ``Decision``) for its redirect hops even if a reload happens while it is in flight.
    public var policy: Policy { current.withLock { $0 } }

    private let current: Locked<Policy>
    private let shadow: Locked<Policy?>
    private let watcher = Locked<Task<Void, Never>?>(nil)
    private let hub = EventHub()
    private let log: AuditLogWriter?
    /// Whether ``shutdown()`` shuts the log down (it opened it) or leaves it to its owner.
    private let ownsLog: Bool
    private let counters = Locked(AuditStatistics())
    private let metrics: PipelineMetrics
    private let inFlight = Locked(InFlight())
    /// Where ``decideDeferred(_:)`` and the deferred finishes keep their records: a serial queue that
    /// runs a request's start before its finish, woken only when idle.
    private let bookkeeper = CoalescingWorker<@Sendable () -> Void>(label: "RequestAudit.AuditPipeline.Bookkeeper") {
        jobs in
        for job in jobs { job() }
    }

    private struct InFlight {
        var count = 0
        /// Of `count`, requests whose deferred finish is queued: their outcome is known.
        var finishing = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    /// Creates a pipeline, opening the audit log of `configuration` if one is set.
    ///
    /// - Parameter log: an audit log writer already open, to append to instead of
    ///   `configuration.logPath` (its owner shuts it down).
    /// - Throws: ``PipelineError/auditLog(_:)`` when the log cannot be opened.
    public init(
        policy: Policy, configuration: PipelineConfiguration = PipelineConfiguration(), log: AuditLogWriter? = nil
    ) throws(PipelineError) {
        self.current = Locked(policy)
        self.shadow = Locked(configuration.shadowPolicy)
        self.metrics = PipelineMetrics(factory: configuration.metricsFactory)
        self.configuration = configuration
        if let log {
            (self.log, ownsLog) = (log, false)
        } else if let path = configuration.logPath {
            do {
                self.log = try AuditLogWriter(
                    path: path, rotation: configuration.logRotation, chainKey: configuration.logChainKey)
            } catch {
                throw .auditLog(error.description)
            }
            ownsLog = true
        } else {
            (self.log, ownsLog) = (nil, false)
        }
    }

    // MARK: Deciding

    /// A decided request: its id, time, redacted snapshot, decision, and the policy that decided it.
    public struct Decision: Sendable {
        /// Where request ids come from: one counter for the process.
        private static let identifiers = RequestIdentifiers()

        /// The request's unique id (in its events, its record, and a proxy's denial).
        public let id = Decision.identifiers.next()
        /// When it was seen, in whole milliseconds (the log's precision, so an event and its logged
        /// copy are equal).
        public let time: Date
        let started: ContinuousClock.Instant
        /// The policy the request was decided by; its redirect hops are checked against it too.
        public let policy: Policy
        /// The verdict.
        public let verdict: Verdict
        /// The request as recorded (redacted).
        public let snapshot: RequestSnapshot
        /// The decision as recorded (redacted).
        public let decision: DecisionSnapshot

        /// Milliseconds since the request was decided.
        public var elapsedMilliseconds: Double { Self.milliseconds(since: started) }

        static func milliseconds(since instant: ContinuousClock.Instant) -> Double {
            let elapsed = ContinuousClock.now - instant
            return Double(elapsed.components.seconds) * 1_000 + Double(elapsed.components.attoseconds) / 1e15
        }
    }

    /// A request's verdict under the policy in force, before anything is counted, published or
    /// recorded: ``decide(_:)`` or ``decideDeferred(_:)`` makes it a decision.
    public struct Evaluation: Sendable {
        /// The request as made (not redacted).
        public let request: AuditRequest
        /// The size of the request's body, when known.
        public let bodyBytes: Int?
        /// The policy in force when the request was evaluated.
        public let policy: Policy
        /// The verdict.
        public let verdict: Verdict
        let nanoseconds: UInt64
        let time: Date
        let started: ContinuousClock.Instant
    }

    /// Evaluates `request` under the policy in force, timed; counts and publishes nothing.
    ///
    /// - Parameters:
    ///   - bodyBytes: the size of the request's body when known.
    ///   - time: when the request was made (replayed traffic); now by default.
    public func evaluate(_ request: AuditRequest, bodyBytes: Int?, at time: Date? = nil) -> Evaluation {
        let policy = self.policy  // one snapshot per request, kept for its redirect hops
        let (verdict, nanoseconds) = policy.evaluateTimed(request, onError: configuration.onMatchError)
        return Evaluation(
            request: request, bodyBytes: bodyBytes, policy: policy, verdict: verdict, nanoseconds: nanoseconds,
            time: (time ?? Date()).roundedToAuditLogPrecision, started: ContinuousClock.now)
    }

    /// Evaluates `request` under the policy in force, counts it, and publishes
    /// ``AuditEvent/started(_:)``. Every decision must end with ``finish(_:warning:outcome:)``.
    ///
    /// - Parameters:
    ///   - bodyBytes: the size of the request's body when known.
    ///   - time: when the request was made (replayed traffic); now by default.
    public func decide(_ request: AuditRequest, bodyBytes: Int?, at time: Date? = nil) -> Decision {
        decide(evaluate(request, bodyBytes: bodyBytes, at: time))
    }

    /// Makes `evaluation` a decision: counts it and publishes ``AuditEvent/started(_:)``. Every
    /// decision must end with ``finish(_:warning:outcome:)``.
    public func decide(_ evaluation: Evaluation) -> Decision {
        count(evaluation.verdict)
        return recordStart(of: evaluation)
    }

    /// Makes `evaluation` a decision whose record-keeping runs later, off the caller's thread: the
    /// request is counted in ``statistics`` and in flight now; its redacted snapshot is made and
    /// ``AuditEvent/started(_:)`` published on the pipeline's bookkeeping queue, within a few
    /// milliseconds. For a front-end whose thread is on every request's path (a URLSession's work
    /// queue). Every such decision must end with ``finishDeferred(_:warning:outcome:)-(DeferredDecision,_,_)``.
    public func decideDeferred(_ evaluation: Evaluation) -> DeferredDecision {
        count(evaluation.verdict)
        let deferred = DeferredDecision(evaluation)
        bookkeeper.enqueue {
            let decision = self.recordStart(of: evaluation)
            deferred.made.withLock { $0 = decision }
        }
        return deferred
    }

    /// A decision made by ``decideDeferred(_:)``: its evaluation now, its ``Decision`` once the
    /// bookkeeping queue has made it.
    public final class DeferredDecision: Sendable {
        /// The evaluation it was made from.
        public let evaluation: Evaluation
        /// The decision, written and read on the pipeline's bookkeeping queue, a serial queue that
        /// runs a request's start before its finish (the lock is never contended).
        fileprivate let made = Locked<Decision?>(nil)

        fileprivate init(_ evaluation: Evaluation) {
            self.evaluation = evaluation
        }

        /// Milliseconds since the request was evaluated.
        public var elapsedMilliseconds: Double {
            Decision.milliseconds(since: evaluation.started)
        }
    }

    /// Counts a decided request in the statistics and in flight.
    private func count(_ verdict: Verdict) {
        counters.withLock { $0.count(verdict) }
        inFlight.withLock { $0.count += 1 }
    }

    /// The decision of `evaluation`, with its redacted snapshots, counted in the metrics and
    /// published as started.
    private func recordStart(of evaluation: Evaluation) -> Decision {
        let verdict = evaluation.verdict
        let request = evaluation.request
        let redaction = configuration.redaction
        var snapshot = DecisionSnapshot(
            verdict, nanoseconds: evaluation.nanoseconds, redirect: verdict.redirectTarget.map(redaction.redact(url:)))
        if let shadowPolicy = shadow.withLock({ $0 }) {
            let live = DecisionSummary(verdict)
            var shadowed = DecisionSummary(shadowPolicy.evaluate(request, onError: configuration.onMatchError))
            if shadowed != live {
                shadowed.redirect = shadowed.redirect.map(redaction.redact(url:))
                snapshot.shadow = shadowed
            }
        }
        let decision = Decision(
            time: evaluation.time,
            started: evaluation.started,
            policy: evaluation.policy,
            verdict: verdict,
            snapshot: redaction.snapshot(of: request, bodyBytes: evaluation.bodyBytes),
            decision: snapshot
        )
        metrics.decided(decision.decision)
        publish(
            .started(
                RequestStarted(
                    id: decision.id, time: decision.time, request: decision.snapshot, decision: decision.decision))
        )
        return decision
    }

    /// Whether `hop` (a redirect a request is about to follow) is refused under `policy`: the block
    /// verdict when a block rule matches, else nil.
    public func hopRefusal(_ hop: AuditRequest, policy: Policy) -> Verdict? {
        let verdict = policy.evaluate(hop, onError: configuration.onMatchError)
        return verdict.action == .block ? verdict : nil
    }

    // MARK: Warnings

    /// Resolves a `warn` verdict: asks the configured warning handler (when `askHandler`), or
    /// applies ``PipelineConfiguration/defaultWarningDecision``.
    public func resolveWarning(_ decision: Decision, askHandler: Bool = true) async -> WarningResolution {
        let fallback = configuration.defaultWarningDecision
        guard askHandler, let handler = configuration.warningHandler else {
            return WarningResolution(decision: fallback, decidedBy: .default)
        }
        let warning = AuditWarning(
            id: decision.id, request: decision.snapshot, rule: decision.decision.rule ?? "-",
            message: decision.decision.message
        )
        let timeout = configuration.warningTimeout
        return await withCheckedContinuation { (continuation: CheckedContinuation<WarningResolution, Never>) in
            let first = FirstAnswer(continuation)
            let handlerTask = Task {
                first.answer(WarningResolution(decision: await handler(warning), decidedBy: .handler))
            }
            Task {
                try? await Task.sleep(for: timeout)
                first.answer(WarningResolution(decision: fallback, decidedBy: .timeout))
                handlerTask.cancel()
            }
        }
    }

    /// Resolves a `warn` verdict at once, for a front-end whose client cannot answer a dialog (the
    /// proxy): proceeds, decided by ``WarningResolution/Source/acknowledged``, when the client
    /// acknowledged the deciding rule (`acknowledgements` holds rule ids); otherwise applies
    /// `fallback` (by default ``PipelineConfiguration/defaultWarningDecision``), decided by default.
    public func resolveWarning(
        _ decision: Decision, acknowledgements: some Sequence<String>,
        fallback: WarningResolution.Decision? = nil
    ) -> WarningResolution {
        if let rule = decision.decision.rule, acknowledgements.contains(rule) {
            return WarningResolution(decision: .proceed, decidedBy: .acknowledged)
        }
        return WarningResolution(decision: fallback ?? configuration.defaultWarningDecision, decidedBy: .default)
    }

    /// Resumes a continuation with the first answer given; later answers are ignored.
    private final class FirstAnswer: Sendable {
        private let continuation: Locked<CheckedContinuation<WarningResolution, Never>?>

        init(_ continuation: CheckedContinuation<WarningResolution, Never>) {
            self.continuation = Locked(continuation)
        }

        func answer(_ resolution: WarningResolution) {
            continuation.withLock { pending in
                defer { pending = nil }
                return pending
            }?.resume(returning: resolution)
        }
    }

    // MARK: Responding

    /// The local response for a `respond` verdict: the rule's body or file, or what its handler
    /// returns for `request` (the request as made, not redacted) and `body`.
    ///
    /// - Throws: ``PipelineError/responseHandlerMissing(handler:rule:)`` when no handler has the
    ///   name, ``PipelineError/responseHandlerFailed(handler:rule:reason:)`` when it throws.
    public func response(for decision: Decision, request: AuditRequest, body: Data?) async throws(PipelineError)
        -> HandlerResponse
    {
        let rule = decision.verdict.rule?.id ?? "-"
        guard let local = decision.verdict.response else {
            throw .responseHandlerMissing(handler: "-", rule: rule)
        }
        if let fixed = HandlerResponse(local) { return fixed }
        let name = local.handler ?? "-"
        guard let handler = configuration.responseHandlers[name] else {
            throw .responseHandlerMissing(handler: name, rule: rule)
        }
        do {
            return try await handler(HandlerRequest(request: request, body: body, rule: rule)).withContentLength
        } catch {
            throw .responseHandlerFailed(handler: name, rule: rule, reason: String(describing: error))
        }
    }

    // MARK: Recording

    /// Completes a request: builds its record, publishes ``AuditEvent/finished(_:)``, appends the
    /// record to the log, and returns it. Call exactly once per ``decide(_:bodyBytes:at:)``.
    ///
    /// - Throws: ``PipelineError/auditLog(_:)`` when the record could not be handed to the log (it
    ///   was still published and counted).
    @discardableResult
    public func finish(_ decision: Decision, warning: WarningResolution?, outcome: OutcomeSnapshot)
        throws(PipelineError) -> AuditRecord
    {
        try finish(decision, warning: warning, outcome: outcome, wasQueued: false)
    }

    /// ``finish(_:warning:outcome:)``, for a deferred finish too (`wasQueued`: counted in
    /// `InFlight.finishing` since it was queued).
    private func finish(_ decision: Decision, warning: WarningResolution?, outcome: OutcomeSnapshot, wasQueued: Bool)
        throws(PipelineError) -> AuditRecord
    {
        let record = AuditRecord(
            id: decision.id, time: decision.time, request: decision.snapshot, decision: decision.decision,
            warning: warning, outcome: outcome
        )
        publish(.finished(record))
        metrics.finished(outcome)
        for exporter in configuration.recordExporters { exporter.export(record) }
        var failure: PipelineError?
        do {
            try log?.append(record)
        } catch {
            failure = .auditLog(error.description)
        }
        let waiters = inFlight.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.count -= 1
            if wasQueued { state.finishing -= 1 }
            guard state.count == 0 else { return [] }
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
        if let failure { throw failure }
        return record
    }

    /// Completes a request decided by ``decideDeferred(_:)`` on the bookkeeping queue, after its
    /// start: builds its record with the outcome `outcome` makes from its decision, then publishes,
    /// logs and counts it as ``finish(_:warning:outcome:)`` does. The request stays in flight (see
    /// ``waitUntilIdle()``) until then; a log failure shows in the log writer's `lastError`.
    public func finishDeferred(
        _ deferred: DeferredDecision, warning: WarningResolution?,
        outcome: @escaping @Sendable (Decision) -> OutcomeSnapshot
    ) {
        inFlight.withLock { $0.finishing += 1 }
        bookkeeper.enqueue {
            // The start ran first on this serial queue; were it missing, the finish makes it.
            let decision = deferred.made.withLock { $0 } ?? self.recordStart(of: deferred.evaluation)
            _ = try? self.finish(decision, warning: warning, outcome: outcome(decision), wasQueued: true)
        }
    }

    /// Completes `decision` as ``finish(_:warning:outcome:)`` does, with the outcome `outcome`
    /// makes, on the bookkeeping queue: for a front-end whose thread is on every request's path. The
    /// request stays in flight (see ``waitUntilIdle()``) until then; a log failure shows in the log
    /// writer's `lastError`.
    public func finishDeferred(
        _ decision: Decision, warning: WarningResolution?, outcome: @escaping @Sendable () -> OutcomeSnapshot
    ) {
        inFlight.withLock { $0.finishing += 1 }
        bookkeeper.enqueue {
            _ = try? self.finish(decision, warning: warning, outcome: outcome(), wasQueued: true)
        }
    }

    /// Publishes `event`, counting the subscribers that dropped it.
    private func publish(_ event: AuditEvent) {
        metrics.dropped(hub.publish(event))
    }

    // MARK: Reloading

    /// Loads the policy in `directory` and puts it in force, if it loads without errors.
    ///
    /// The new policy is compiled completely before it replaces the old one in a single step, so no
    /// request is ever evaluated against a half-loaded policy. Requests already in flight finish
    /// under the policy they started with. When the folder fails to load (any lint error), the
    /// previous policy stays in force, ``AuditEvent/policyReloadFailed(_:)`` is published, and the
    /// error is thrown.
    ///
    /// - Returns: the policy now in force.
    /// - Throws: ``PipelineError/policyReload(_:)`` with every problem found.
    @discardableResult
    public func reloadPolicy(from directory: String) throws(PipelineError) -> Policy {
        let loaded: Policy
        do {
            loaded = try Policy(directory: directory, limits: policy.rules.first?.pattern.limits ?? .default)
        } catch {
            let failure = PolicyReloadFailure(directory: directory, time: Date(), problems: error.lines)
            publish(.policyReloadFailed(failure))
            counters.withLock { $0.failedReloads += 1 }
            throw .policyReload(failure)
        }
        current.withLock { $0 = loaded }
        counters.withLock { $0.reloads += 1 }
        publish(.policyReloaded(PolicyReloaded(directory: directory, time: Date(), rules: loaded.rules.count)))
        return loaded
    }

    /// The shadow policy decided beside the live one (never enforced), if any.
    public var shadowPolicy: Policy? { shadow.withLock { $0 } }

    /// Puts `policy` in as the shadow policy (nil: none) for requests that start from now on.
    public func setShadowPolicy(_ policy: Policy?) {
        shadow.withLock { $0 = policy }
    }

    /// Loads the shadow policy from `directory`, if it loads without errors; the previous shadow
    /// stays otherwise.
    ///
    /// - Throws: ``PipelineError/policyReload(_:)`` with every problem found.
    @discardableResult
    public func reloadShadowPolicy(from directory: String) throws(PipelineError) -> Policy {
        do {
            let loaded = try Policy(directory: directory, limits: policy.rules.first?.pattern.limits ?? .default)
            setShadowPolicy(loaded)
            return loaded
        } catch {
            throw .policyReload(PolicyReloadFailure(directory: directory, time: Date(), problems: error.lines))
        }
    }

    /// Reloads the policy whenever a `.rules` file under `directory` changes (checked every
    /// `interval`), until ``stopWatchingPolicies()`` or ``shutdown()``. A change that fails to load
    /// keeps the previous policy and publishes ``AuditEvent/policyReloadFailed(_:)``.
    public func watchPolicies(in directory: String, every interval: Duration = .seconds(1)) {
        let fingerprint = PolicyFingerprint(directory: directory)
        let task = Task.detached { [weak self] in
            var last = fingerprint
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                let now = PolicyFingerprint(directory: directory)
                guard now != last else { continue }
                last = now
                _ = try? self?.reloadPolicy(from: directory)
            }
        }
        watcher.withLock { previous in
            previous?.cancel()
            previous = task
        }
    }

    /// Stops the watching started by ``watchPolicies(in:every:)``.
    public func stopWatchingPolicies() {
        watcher.withLock { task in
            task?.cancel()
            task = nil
        }
    }

    // MARK: Observing

    /// A new subscription to the event stream, with its own buffer of `bufferSize` events.
    ///
    /// A subscriber that falls behind never slows requests: events beyond its buffer are dropped for
    /// it alone, and it then receives ``AuditEvent/dropped(count:)``. The stream ends at ``shutdown()``.
    public func events(bufferSize: Int = 1_024) -> AuditEventStream {
        hub.subscribe(bufferSize: bufferSize)
    }

    /// The counters so far.
    public var statistics: AuditStatistics { counters.withLock { $0 } }

    /// Requests decided and not yet finished (for a deferred finish, until it has run).
    public var inFlightCount: Int { inFlight.withLock { $0.count } }

    /// Requests decided whose outcome is not known yet: ``inFlightCount`` less those whose deferred
    /// finish is queued. What a front-end compares with a concurrency limit.
    public var activeCount: Int { inFlight.withLock { $0.count - $0.finishing } }

    // MARK: Stopping

    /// Waits until every decided request has finished.
    public func waitUntilIdle() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isIdle = inFlight.withLock { state in
                if state.count == 0 { return true }
                state.waiters.append(continuation)
                return false
            }
            if isIdle { return continuation.resume() }
            // Deferred finishes run at the bookkeeper's next look; this one need not wait for it.
            bookkeeper.runPending()
        }
    }

    /// Waits for the requests in flight, stops watching policies, ends every event stream, and
    /// writes and syncs the audit log (shutting it down if the pipeline opened it).
    ///
    /// After it returns, every request the pipeline saw has its record on disk.
    /// - Throws: ``PipelineError/auditLog(_:)`` if some records could not be written.
    public func shutdown() async throws(PipelineError) {
        await waitUntilIdle()
        stopWatchingPolicies()
        hub.finish()
        for exporter in configuration.recordExporters { await exporter.shutdown() }
        guard let log else { return }
        guard ownsLog else { return await log.flush() }
        do {
            try await log.shutdown()
        } catch {
            throw .auditLog(error.description)
        }
    }
}
