import AuditLocking
import AuditPolicy
import AuditReport
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Audits every `URLSession` request of a process against a policy: one object, one call to turn on.
///
/// ```swift
/// let auditor = try Auditor(policy: Policy(directory: "policies"), configuration: {
///     var configuration = AuditorConfiguration()
///     configuration.logPath = "audit.jsonl"
///     return configuration
/// }())
/// try auditor.install()                       // URLSession.shared is audited (see install(into:))
/// Task { for await event in auditor.events() { print(event) } }
/// let (data, _) = try await URLSession.shared.data(from: URL(string: "https://example.org/")!)
/// try await auditor.shutdown()                // waits for requests in flight, flushes the log
/// ```
///
/// Only one auditor is installed at a time in a process (URLProtocol registration is global).
public final class Auditor: Sendable {
    /// The behaviour settings.
    public let configuration: AuditorConfiguration
    /// The policy in force now; ``reloadPolicy(from:)`` replaces it.
    ///
    /// Each request is decided by the policy in force when it starts, and keeps that policy for its
    /// redirect hops even if a reload happens while it is in flight.
    public var policy: Policy { current.withLock { $0 } }

    private let current: Locked<Policy>
    private let watcher = Locked<Task<Void, Never>?>(nil)

    let hub = EventHub()
    let log: AuditLogWriter?
    let forwarder: Forwarder
    private let counters = Locked(AuditStatistics())
    private let inFlight = Locked(InFlight())

    private struct InFlight {
        var count = 0
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    /// Creates an auditor (not yet installed), opening the audit log if one is configured.
    ///
    /// - Throws: ``RequestAuditError/auditLog(_:)`` when the log cannot be opened.
    public init(policy: Policy, configuration: AuditorConfiguration = AuditorConfiguration()) throws(RequestAuditError)
    {
        self.current = Locked(policy)
        self.configuration = configuration
        if let path = configuration.logPath {
            do {
                log = try AuditLogWriter(path: path, rotation: configuration.logRotation)
            } catch {
                throw .auditLog(error.description)
            }
        } else {
            log = nil
        }
        forwarder = Forwarder()
    }

    /// The check of redirect hops under `policy`: a refusal when a block rule matches the hop.
    static func hopVerdict(_ policy: Policy, onError: MatchErrorHandling)
        -> @Sendable (URLRequest) -> RequestAuditError?
    {
        { hop in
            let verdict = policy.evaluate(hop.auditRequest, onError: onError)
            guard verdict.action == .block else { return nil }
            return .blocked(rule: verdict.rule?.id ?? "-", message: verdict.message, url: hop.url?.absoluteString ?? "")
        }
    }

    func hopVerdict(_ policy: Policy) -> @Sendable (URLRequest) -> RequestAuditError? {
        Self.hopVerdict(policy, onError: configuration.onMatchError)
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
    /// - Throws: ``RequestAuditError/policyReload(_:)`` with every problem found.
    @discardableResult
    public func reloadPolicy(from directory: String) throws(RequestAuditError) -> Policy {
        let loaded: Policy
        do {
            loaded = try Policy(directory: directory, limits: policy.rules.first?.pattern.limits ?? .default)
        } catch {
            let failure = PolicyReloadFailure(directory: directory, time: Date(), problems: error.lines)
            hub.publish(.policyReloadFailed(failure))
            counters.withLock { $0.failedReloads += 1 }
            throw .policyReload(failure)
        }
        current.withLock { $0 = loaded }
        counters.withLock { $0.reloads += 1 }
        hub.publish(.policyReloaded(PolicyReloaded(directory: directory, time: Date(), rules: loaded.rules.count)))
        return loaded
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

    // MARK: Installing

    /// Intercepts `URLSession.shared` and sessions whose configuration lists no protocol classes.
    ///
    /// On Linux a session made from `URLSessionConfiguration.default` or `.ephemeral` lists
    /// Foundation's own HTTP protocol, which is asked before any registered class: such sessions are
    /// not intercepted by this call. Use ``install(into:)`` on their configuration.
    ///
    /// - Throws: ``RequestAuditError/anotherAuditorInstalled``, or
    ///   ``RequestAuditError/unsupportedPlatform(_:)`` when this Foundation lacks what interception
    ///   relies on.
    public func install() throws(RequestAuditError) {
        try activate()
        // FoundationNetworking consults registered classes in registration order and registers its
        // own HTTP protocol when the first session is made, so a plain registerClass would never be
        // asked. Put RequestInfoProtocol ahead of the built-in protocols.
        let builtIns = URLSessionConfiguration.default.protocolClasses ?? []
        for protocolClass in builtIns { URLProtocol.unregisterClass(protocolClass) }
        _ = URLProtocol.registerClass(RequestInfoProtocol.self)
        for protocolClass in builtIns { _ = URLProtocol.registerClass(protocolClass) }
    }

    /// Intercepts the sessions created from `sessionConfiguration` from now on.
    ///
    /// - Throws: ``RequestAuditError/anotherAuditorInstalled``, or
    ///   ``RequestAuditError/unsupportedPlatform(_:)`` when this Foundation lacks what interception
    ///   relies on.
    public func install(into sessionConfiguration: URLSessionConfiguration) throws(RequestAuditError) {
        try activate()
        let others = (sessionConfiguration.protocolClasses ?? []).filter { $0 != RequestInfoProtocol.self }
        sessionConfiguration.protocolClasses = [RequestInfoProtocol.self] + others
    }

    /// Stops intercepting new requests (global registration and configured sessions alike);
    /// requests in flight finish normally.
    public func uninstall() {
        URLProtocol.unregisterClass(RequestInfoProtocol.self)
        RequestInfoProtocol.active.withLock { active in
            if active === self { active = nil }
        }
    }

    private func activate() throws(RequestAuditError) {
        try PlatformInternals.check()
        guard forwarder.completesOnWorkQueue else { throw .unsupportedPlatform("URLSession.workQueue not found") }
        try RequestInfoProtocol.active.withLock { active throws(RequestAuditError) in
            if let active, active !== self { throw .anotherAuditorInstalled }
            active = self
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

    /// Requests being audited right now.
    public var inFlightCount: Int { inFlight.withLock { $0.count } }

    /// Uninstalls, waits for the requests in flight, writes and syncs the audit log, and ends every
    /// event stream.
    ///
    /// After it returns, every request the auditor saw has its record on disk.
    /// - Throws: ``RequestAuditError/auditLog(_:)`` if some records could not be written.
    public func shutdown() async throws(RequestAuditError) {
        uninstall()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isIdle = inFlight.withLock { state in
                if state.count == 0 { return true }
                state.waiters.append(continuation)
                return false
            }
            if isIdle { continuation.resume() }
        }
        forwarder.invalidate()
        stopWatchingPolicies()
        hub.finish()
        do {
            try await log?.shutdown()
        } catch {
            throw .auditLog(error.description)
        }
    }

    // MARK: Per request (used by RequestInfoProtocol)

    /// A decided request: its id, time, redacted snapshot and decision.
    struct Decision: Sendable {
        /// Where request ids come from: one counter for the process.
        private static let identifiers = RequestIdentifiers()

        let id = Decision.identifiers.next()
        /// Whole milliseconds, the precision the log keeps, so an event and its logged copy are equal.
        let time = Date().roundedToAuditLogPrecision
        let started = ContinuousClock.now
        /// The policy the request was decided by; its redirect hops are checked against it too.
        let policy: Policy
        let verdict: Verdict
        let snapshot: RequestSnapshot
        let decision: DecisionSnapshot
    }

    /// Evaluates `request`, counts it, and publishes ``AuditEvent/started(_:)``.
    func decide(_ request: URLRequest) -> Decision {
        let auditRequest = request.auditRequest
        let policy = self.policy  // one snapshot per request, kept for its redirect hops
        let (verdict, nanoseconds) = policy.evaluateTimed(auditRequest, onError: configuration.onMatchError)
        let redaction = configuration.redaction
        let decision = Decision(
            policy: policy,
            verdict: verdict,
            snapshot: redaction.snapshot(of: auditRequest, bodyBytes: request.httpBody?.count),
            decision: DecisionSnapshot(
                verdict, nanoseconds: nanoseconds, redirect: verdict.redirectTarget.map(redaction.redact(url:))
            )
        )
        counters.withLock { $0.count(decision.decision) }
        inFlight.withLock { $0.count += 1 }
        hub.publish(
            .started(
                RequestStarted(
                    id: decision.id, time: decision.time, request: decision.snapshot, decision: decision.decision))
        )
        return decision
    }

    /// Asks the warning handler (or applies the default) for a `warn` verdict.
    func resolveWarning(_ decision: Decision, askHandler: Bool) async -> WarningResolution {
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

    /// Completes a request's record: publishes ``AuditEvent/finished(_:)`` and appends it to the log.
    func finish(_ decision: Decision, warning: WarningResolution?, outcome: OutcomeSnapshot) {
        let record = AuditRecord(
            id: decision.id, time: decision.time, request: decision.snapshot, decision: decision.decision,
            warning: warning, outcome: outcome
        )
        hub.publish(.finished(record))
        try? log?.append(record)
        let waiters = inFlight.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.count -= 1
            guard state.count == 0 else { return [] }
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Milliseconds since `decision` was made.
    func elapsedMilliseconds(since decision: Decision) -> Double {
        let elapsed = ContinuousClock.now - decision.started
        return Double(elapsed.components.seconds) * 1_000 + Double(elapsed.components.attoseconds) / 1e15
    }
}
