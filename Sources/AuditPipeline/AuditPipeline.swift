import AuditLocking
import AuditPolicy
import AuditReport
import Foundation

/// The one audit pipeline every front-end hands its requests to: decide → warn → (the front-end
/// sends, refuses or responds) → record → events → statistics → log; and policy reloads.
///
/// A front-end is a transport adapter: the in-app `RequestInfoProtocol`, `audit proxy` and
/// `audit replay` each turn what they see into an `AuditRequest`, ask
/// ``admit(_:bodyBytes:at:capabilities:)``, carry out its ``Admission`` in their own transport, and
/// end with the ``AuditedRequest``'s ``AuditedRequest/finish(_:)``, exactly once. None of them
/// switches on the verdict, builds records, counts statistics or publishes events itself.
///
/// ```swift
/// let pipeline = try AuditPipeline(policy: Policy(directory: "policies"))
/// let audited = pipeline.admit(AuditRequest(method: "GET", url: "https://example.org/"), bodyBytes: nil)
/// if case .send = audited.admission {
///     // … send it …
///     audited.finish(Outcome(.response, status: 200, destination: .asDecided))
/// }
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
    /// Where requests' records are made, published and logged: a serial queue woken only when idle,
    /// off the front-ends' threads (a URLSession's work queue, an event loop).
    private let bookkeeper = CoalescingWorker<@Sendable () -> Void>(label: "RequestAudit.AuditPipeline.Bookkeeper") {
        jobs in
        for job in jobs { job() }
    }

    private struct InFlight {
        var count = 0
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
    ///
    /// A class: every front-end hands it around for the request's whole life (its exchange, its
    /// record, its events), and a reference is one count where a copy of its fields was a dozen.
    public final class Decision: Sendable {
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

        init(
            time: Date, started: ContinuousClock.Instant, policy: Policy, verdict: Verdict, snapshot: RequestSnapshot,
            decision: DecisionSnapshot
        ) {
            self.time = time
            self.started = started
            self.policy = policy
            self.verdict = verdict
            self.snapshot = snapshot
            self.decision = decision
        }

        /// Milliseconds since the request was decided.
        public var elapsedMilliseconds: Double { Self.milliseconds(since: started) }

        static func milliseconds(since instant: ContinuousClock.Instant) -> Double {
            (ContinuousClock.now - instant).milliseconds
        }
    }

    /// A request's verdict under the policy in force, before anything is counted, published or
    /// recorded.
    private struct Evaluation: Sendable {
        /// The request as made (not redacted).
        let request: AuditRequest
        /// The size of the request's body, when known.
        let bodyBytes: Int?
        /// The policy in force when the request was evaluated.
        let policy: Policy
        /// The verdict.
        let verdict: Verdict
        let nanoseconds: UInt64
        let time: Date
        let started: ContinuousClock.Instant
    }

    /// Evaluates `request` under the policy in force, timed; counts and publishes nothing.
    private func evaluate(_ request: AuditRequest, bodyBytes: Int?, at time: Date?) -> Evaluation {
        let policy = self.policy  // one snapshot per request, kept for its redirect hops
        let (verdict, nanoseconds) = policy.evaluateTimed(request, onError: configuration.onMatchError)
        return Evaluation(
            request: request, bodyBytes: bodyBytes, policy: policy, verdict: verdict, nanoseconds: nanoseconds,
            time: (time ?? Date()).roundedToAuditLogPrecision, started: ContinuousClock.now)
    }

    /// Decides `request` under the policy in force, counts it, publishes ``AuditEvent/started(_:)``,
    /// and says what the front-end is to do with it. The request must end with
    /// ``AuditedRequest/finish(_:)``.
    ///
    /// - Parameters:
    ///   - bodyBytes: the size of the request's body when known.
    ///   - time: when the request was made (replayed traffic); now by default.
    ///   - capabilities: what the front-end can carry out besides sending and refusing; a redirect or
    ///     a local response it cannot carry out is refused (fails closed).
    ///   - tunnel: for a request seen inside a CONNECT tunnel whose TLS was terminated, the id of the
    ///     CONNECT's decision (its record links to it).
    ///   - gateway: for a gateway's authorization check, the contract it came through and the id the
    ///     gateway gave the request (both kept in the record).
    public func admit(
        _ request: AuditRequest, bodyBytes: Int?, at time: Date? = nil, capabilities: FrontEndCapabilities = .all,
        tunnel: UUID? = nil, gateway: (contract: String, requestID: String?)? = nil
    ) -> AuditedRequest {
        let evaluation = evaluate(request, bodyBytes: bodyBytes, at: time)
        count(evaluation.verdict)
        let decision = recordStart(of: evaluation, tunnel: tunnel, gateway: gateway)
        return AuditedRequest(
            decision: decision, admission: admission(of: decision, capabilities: capabilities), pipeline: self)
    }

    /// What a front-end with `capabilities` does with `decision`.
    private func admission(of decision: Decision, capabilities: FrontEndCapabilities) -> Admission {
        let verdict = decision.verdict
        switch verdict.action {
        case .block:
            return .refuse(refusal(.blocked, of: decision))
        case .warn:
            return .warn
        case .redirect:
            guard capabilities.contains(.redirect), let target = verdict.redirectTarget else {
                return .refuse(refusal(.redirectUnavailable(target: decision.decision.redirect ?? ""), of: decision))
            }
            return .send(redirectedTo: target)
        case .respond:
            guard capabilities.contains(.respond), let response = verdict.response else {
                return .refuse(refusal(.responseUnavailable, of: decision))
            }
            return .respond(response)
        case .allow, .pass:
            return .send(redirectedTo: nil)
        }
    }

    /// The refusal of `decision` for `reason`.
    func refusal(_ reason: Refusal.Reason, of decision: Decision) -> Refusal {
        Refusal(
            reason, rule: decision.decision.rule ?? "-", message: decision.verdict.message, url: decision.snapshot.url)
    }

    /// Counts a CONNECT, decided and counted already, whose intercepted tunnel carries requests.
    package func countInterceptedTunnel() {
        counters.withLock { $0.interceptedTunnels += 1 }
    }

    /// Counts a decided request in the statistics and in flight.
    private func count(_ verdict: Verdict) {
        counters.withLock { $0.count(verdict) }
        inFlight.withLock { $0.count += 1 }
    }

    /// The decision of `evaluation`, with its redacted snapshots, counted in the metrics and
    /// published as started.
    private func recordStart(
        of evaluation: Evaluation, tunnel: UUID?, gateway: (contract: String, requestID: String?)?
    ) -> Decision {
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
        var requestSnapshot = redaction.snapshot(of: request, bodyBytes: evaluation.bodyBytes)
        requestSnapshot.tunnel = tunnel
        requestSnapshot.gateway = gateway?.contract
        requestSnapshot.gatewayRequestID = gateway?.requestID
        let decision = Decision(
            time: evaluation.time,
            started: evaluation.started,
            policy: evaluation.policy,
            verdict: verdict,
            snapshot: requestSnapshot,
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
    package func hopRefusal(_ hop: AuditRequest, policy: Policy) -> Verdict? {
        let verdict = policy.evaluate(hop, onError: configuration.onMatchError)
        return verdict.action == .block ? verdict : nil
    }

    // MARK: Warnings

    /// Resolves a `warn` verdict: asks the configured warning handler (when `askHandler`), or
    /// applies ``PipelineConfiguration/defaultWarningDecision``.
    func resolveWarning(_ decision: Decision, askHandler: Bool = true) async -> WarningResolution {
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
    func resolveWarning(
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
    func response(for decision: Decision, request: AuditRequest, body: Data?) async throws(PipelineError)
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

    /// Ends the request `decision` made with `outcome`: on the bookkeeping queue, builds its record
    /// (once, for every front-end), publishes ``AuditEvent/finished(_:)``, exports and logs it, then
    /// counts it out of flight. A log failure shows in the log writer's `lastError` and at
    /// ``shutdown()``.
    func record(_ decision: Decision, warning: WarningResolution?, outcome: Outcome) {
        // Timed now, made into a record later.
        let milliseconds = outcome.durationMilliseconds ?? decision.elapsedMilliseconds
        bookkeeper.enqueue {
            self.complete(
                AuditRecord(
                    id: decision.id, time: decision.time, request: decision.snapshot, decision: decision.decision,
                    warning: warning, outcome: self.snapshot(of: outcome, decision, milliseconds: milliseconds)))
        }
    }

    /// The outcome as recorded: URLs and error text redacted.
    private func snapshot(of outcome: Outcome, _ decision: Decision, milliseconds: Double) -> OutcomeSnapshot {
        let redaction = configuration.redaction
        let forwarded: String? =
            switch outcome.destination {
            case .none: nil
            case .asDecided: decision.decision.redirect ?? decision.snapshot.url
            case .url(let url): redaction.redact(url: url)
            }
        return OutcomeSnapshot(
            kind: outcome.kind, status: outcome.status, bytes: outcome.bytes, durationMilliseconds: milliseconds,
            forwardedURL: forwarded, finalURL: outcome.finalURL.map(redaction.redact(url:)),
            redirects: outcome.redirects.map(redaction.redact(url:)),
            error: outcome.failure.map {
                OutcomeSnapshot.ErrorSnapshot(
                    domain: $0.domain, code: $0.code, description: redaction.redact(text: $0.description))
            }, sentBytes: outcome.sentBytes)
    }

    /// Publishes, exports and logs `record`, and counts its request out of flight.
    private func complete(_ record: AuditRecord) {
        publish(.finished(record))
        metrics.finished(record.outcome)
        for exporter in configuration.recordExporters { exporter.export(record) }
        try? log?.append(record)
        let waiters = inFlight.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.count -= 1
            guard state.count == 0 else { return [] }
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Makes the records of every request finished so far, on this thread (for synchronous code, never
    /// on the bookkeeping queue): their records are then in the log writer.
    package func recordFinishedNow() {
        bookkeeper.flushAndWait {}
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
    /// keeps the previous policy and publishes ``AuditEvent/policyReloadFailed(_:)``; `onReload`, when
    /// given, is told each reload's result too.
    public func watchPolicies(
        in directory: String, every interval: Duration = .seconds(1),
        onReload: (@Sendable (Result<Policy, PipelineError>) -> Void)? = nil
    ) {
        let fingerprint = PolicyFingerprint(directory: directory)
        let task = Task.detached { [weak self] in
            var last = fingerprint
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                let now = PolicyFingerprint(directory: directory)
                guard now != last, let self else { continue }
                last = now
                let result = Result { () throws(PipelineError) in try self.reloadPolicy(from: directory) }
                onReload?(result)
            }
        }
        watcher.withLock { previous in
            previous?.cancel()
            previous = task
        }
    }

    /// Stops the watching started by ``watchPolicies(in:every:onReload:)``.
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

    /// Requests admitted whose record is not made yet (a few milliseconds after they finished).
    public var inFlightCount: Int { inFlight.withLock { $0.count } }

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
            // Records are made at the bookkeeper's next look; this one need not wait for it.
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
