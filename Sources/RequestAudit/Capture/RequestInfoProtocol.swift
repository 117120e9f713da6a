import AuditLocking
import AuditPolicy
import AuditReport
import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The `URLProtocol` that audits requests: it decides each one with the installed ``Auditor``'s
/// policy, publishes it, forwards it unchanged through the forwarding session (unless a rule says
/// otherwise), and hands the real response, body, error and completion back to the caller.
///
/// Install it through ``Auditor/install()`` or ``Auditor/install(into:)``, not directly.
///
/// Platform notes (Linux FoundationNetworking): the response body is delivered in one piece at the
/// end, because each `didLoad` replaces the body of completion-handler and `async` callers; HTTP
/// redirects are followed by the forwarding session and the caller gets the final response (its URL
/// is the final URL); a request that may carry a body the protocol cannot see (`uploadTask(with:from:)`)
/// is decided in `canInit` and, unless refused, left to the system loader so its body is never lost.
public final class RequestInfoProtocol: URLProtocol {
    // `URLProtocol` is not Sendable (and Linux marks the conformance unavailable); every mutable field
    // of this class is in `state`, guarded by a lock (`Locked`, a Mutex), so it crosses tasks inside `Reference`.

    /// The installed auditor.
    static let active = Locked<Auditor?>(nil)

    private let state = Locked(LoadState())
    /// Where `startLoading` hands requests on to be decided and forwarded: four serial queues,
    /// taken in turn.
    ///
    /// Serial queues run on libdispatch's overcommit threads, so a hop never waits behind the
    /// caller's Swift tasks, which share the global concurrent queue's few threads; and hops that
    /// arrive while a queue drains join it without waking another thread. A hop's work is short (a
    /// decision) or waits for the session queue every session shares (creating and resuming the
    /// forwarded task): with four queues, four hops can wait for it at once, so the next is ready
    /// when it frees. Measured against `DispatchQueue.global()`, interception overhead one request
    /// at a time went from +9.4 % to +5.0 % p50 (one queue, median of 12 alternated runs); sixteen
    /// at a time, four queues against one went from +17.4 % to +13.3 % p50 (median of 7).
    private static let hopQueues = (0..<4).map { DispatchQueue(label: "RequestAudit.RequestInfoProtocol.hop\($0)") }
    private static let hopTurn = Atomic<Int>(0)

    /// The hop queue whose turn it is (the count is a power of two, so a wrapped turn still picks one).
    private static var nextHopQueue: DispatchQueue {
        hopQueues[hopTurn.wrappingAdd(1, ordering: .relaxed).oldValue & (hopQueues.count - 1)]
    }
    /// The caller session's work queue, where the client is told of results (see CallerSession).
    private let clientQueue = Locked<DispatchQueue?>(nil)

    /// Whether this protocol handles `request`: http(s), an auditor installed,
    /// and, for a request whose body may be invisible here, a verdict that refuses it.
    public override class func canInit(with request: URLRequest) -> Bool {
        guard let scheme = request.url?.scheme?.lowercased(), scheme == "http" || scheme == "https",
            let auditor = active.withLock({ $0 })
        else { return false }
        guard request.mayHaveInvisibleBody else { return true }
        // The body lives in the task, out of reach: refuse here or let the system loader send it.
        let decision = auditor.decide(request)
        if isRefused(decision, auditor: auditor) {
            // startLoading decides again and refuses; this decision only served to choose.
            auditor.finish(decision, warning: nil, outcome: OutcomeSnapshot(kind: .blocked, durationMilliseconds: 0))
            return true
        }
        let warning =
            decision.verdict.action == .warn
            ? WarningResolution(decision: .proceed, decidedBy: .default) : nil
        auditor.finish(
            decision, warning: warning,
            outcome: OutcomeSnapshot(
                kind: .systemLoader, durationMilliseconds: auditor.elapsedMilliseconds(since: decision),
                forwardedURL: decision.snapshot.url
            )
        )
        return false
    }

    private static func isRefused(_ decision: Auditor.Decision, auditor: Auditor) -> Bool {
        switch decision.verdict.action {
        case .block: true
        case .warn: auditor.configuration.defaultWarningDecision == .cancel
        default: false
        }
    }

    /// Returns `request` unchanged.
    public override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    /// Decides and starts the request off the session's work queue.
    public override func startLoading() {
        guard state.withLock({ $0.start() }) else { return }
        let this = Reference(self)
        // This runs on the caller session's work queue, which keeps the session's details after its first task.
        let known = CallerSession.detailsOfCurrentQueue()
        guard let auditor = Self.active.withLock({ $0 }) else {
            // Uninstalled between canInit and now: behave as if RequestAudit were not there.
            Task.detached { this.value.forwardUnaudited(this.value.readCallerSession(known)) }
            return
        }
        // Everything else happens off this queue, which every session's work goes through.
        // A dispatch queue rather than a task: the hop is on every request's path, and the
        // cooperative pool can be busy with the caller's own tasks (only a warning's question
        // needs async, and `run` starts a task for it). See `hopQueues`.
        Self.nextHopQueue.async {
            this.value.run(auditor, caller: this.value.readCallerSession(known))
        }
    }

    /// The caller session's details (`known` from its work queue, or read by reflection, see
    /// CallerSession); keeps its work queue for telling the client.
    private func readCallerSession(_ known: CallerSession.Details?) -> CallerSession.Details {
        let caller = known ?? CallerSession.details(of: task)
        clientQueue.withLock { $0 = caller.workQueue }
        return caller
    }

    /// Carries the protocol across tasks. Safe because its mutable state is all in `state` (a `Locked` Mutex)
    /// and `client`/`request`/`task` are set once by Foundation before `startLoading`.
    private struct Reference: @unchecked Sendable {
        let value: RequestInfoProtocol
        init(_ value: RequestInfoProtocol) { self.value = value }
    }

    /// Cancels the forwarded request; the session reports the cancellation to the caller itself.
    public override func stopLoading() {
        guard let task = state.withLock({ $0.stop() }) else { return }
        // stopLoading runs on the work queue every session shares: touching a task here deadlocks.
        let forwarded = ForwardedTask(task)
        Task.detached { forwarded.task.cancel() }
    }

    /// A forwarded task crossing to another thread to be cancelled; `cancel()` is thread-safe.
    private struct ForwardedTask: @unchecked Sendable {
        let task: URLSessionDataTask
        init(_ task: URLSessionDataTask) { self.task = task }
    }

    private func run(_ auditor: Auditor, caller: CallerSession.Details) {
        let decision = auditor.decide(request)
        let verdict = decision.verdict
        let url = decision.snapshot.url
        switch verdict.action {
        case .block:
            refuse(.blocked(rule: verdict.rule?.id ?? "-", message: verdict.message, url: url), auditor, decision, nil)
        case .warn:
            let this = Reference(self)
            Task {
                await this.value.resolveWarning(decision, auditor, caller: caller)
            }
        case .redirect:
            var redirected = request
            redirected.url = verdict.redirectTarget.flatMap(URL.init(string:)) ?? request.url
            forward(redirected, auditor, decision, nil, caller)
        case .allow, .pass:
            forward(request, auditor, decision, nil, caller)
        }
    }

    /// Asks about a `warn` verdict, then refuses or forwards the request.
    private func resolveWarning(
        _ decision: Auditor.Decision, _ auditor: Auditor, caller: CallerSession.Details
    ) async {
        let verdict = decision.verdict
        let resolution = await auditor.resolveWarning(decision, askHandler: !request.mayHaveInvisibleBody)
        if resolution.decision == .cancel {
            let refusal = RequestAuditError.warningDeclined(
                rule: verdict.rule?.id ?? "-", message: verdict.message, url: decision.snapshot.url)
            refuse(refusal, auditor, decision, resolution)
        } else {
            forward(request, auditor, decision, resolution, caller)
        }
    }

    private func refuse(
        _ refusal: RequestAuditError, _ auditor: Auditor, _ decision: Auditor.Decision, _ warning: WarningResolution?
    ) {
        let error = refusal.urlError
        let isDelivered = state.withLock { $0.finish() }
        let kind: OutcomeSnapshot.Kind = if case .blocked = refusal { .blocked } else { .warningDeclined }
        // The record is published before the caller hears of it: a finished request always has one.
        auditor.finish(
            decision, warning: warning,
            outcome: OutcomeSnapshot(
                kind: isDelivered ? kind : .cancelled,
                durationMilliseconds: auditor.elapsedMilliseconds(since: decision),
                error: .init(error, redaction: auditor.configuration.redaction)
            )
        )
        if isDelivered { tellClient { this in this.client?.urlProtocol(this, didFailWithError: error) } }
    }

    /// Runs `message` on the caller session's work queue (or here when it is unknown), or right here
    /// when `isOnSessionQueue`: the forwarding session's work queue targets the same serial queue as
    /// the caller's, so nothing else of the caller's session runs meanwhile.
    private func tellClient(
        isOnSessionQueue: Bool = false, _ message: @escaping @Sendable (RequestInfoProtocol) -> Void
    ) {
        let this = Reference(self)
        guard !isOnSessionQueue, let queue = clientQueue.withLock({ $0 }) else { return message(self) }
        queue.async { message(this.value) }
    }

    private func forward(
        _ request: URLRequest, _ auditor: Auditor, _ decision: Auditor.Decision, _ warning: WarningResolution?,
        _ caller: CallerSession.Details
    ) {
        let outgoing = request.applying(caller)
        let redaction = auditor.configuration.redaction
        let this = Reference(self)
        let cookies = Forwarder.CookieJar(caller.configuration)
        let task = auditor.forwarder.start(outgoing, cookies: cookies, hopVerdict: auditor.hopVerdict(decision.policy))
        {
            result in
            let delivery = this.value.delivery(of: result)
            auditor.finish(
                decision, warning: warning,
                outcome: OutcomeSnapshot(
                    kind: delivery.kind, status: (result.response as? HTTPURLResponse)?.statusCode,
                    bytes: delivery.kind == .response ? result.data?.count ?? 0 : nil,
                    durationMilliseconds: auditor.elapsedMilliseconds(since: decision),
                    forwardedURL: outgoing.url.map { redaction.redact(url: $0.absoluteString) },
                    finalURL: result.response?.url.map { redaction.redact(url: $0.absoluteString) },
                    redirects: result.trace.redirects.map { redaction.redact(url: $0.absoluteString) },
                    error: delivery.error.map { OutcomeSnapshot.ErrorSnapshot($0, redaction: redaction) }
                )
            )
            this.value.relay(
                delivery, result, cookies: cookies, isOnSessionQueue: auditor.forwarder.completesOnWorkQueue)
        }
        state.withLock { $0.forwarding(task) }?.cancel()
    }

    /// What the caller is to get for a forwarded result.
    private struct Delivery {
        var kind: OutcomeSnapshot.Kind
        var error: Error?
        /// False when the caller stopped the load: nothing is relayed.
        var isDelivered: Bool
    }

    /// Works out what the caller gets for `result`, and claims the right to tell it.
    private func delivery(of result: Forwarder.Result) -> Delivery {
        guard state.withLock({ $0.finish() }) else {
            return Delivery(kind: .cancelled, error: result.error ?? URLError(.cancelled), isDelivered: false)
        }
        if let (_, refusal) = result.trace.blockedHop {
            return Delivery(kind: .blocked, error: refusal.urlError, isDelivered: true)
        }
        if let error = result.error { return Delivery(kind: .failure, error: error, isDelivered: true) }
        guard result.response != nil else {
            return Delivery(kind: .failure, error: URLError(.badServerResponse), isDelivered: true)
        }
        return Delivery(kind: .response, error: nil, isDelivered: true)
    }

    /// Hands the forwarded result to the caller, exactly as received (see `tellClient` for
    /// `isOnSessionQueue`).
    private func relay(
        _ delivery: Delivery, _ result: Forwarder.Result, cookies: Forwarder.CookieJar?, isOnSessionQueue: Bool = false
    ) {
        guard delivery.isDelivered else { return }
        if let error = delivery.error {
            let failure = SendableError(error)
            tellClient(isOnSessionQueue: isOnSessionQueue) { this in
                this.client?.urlProtocol(this, didFailWithError: failure.error)
            }
            return
        }
        guard let response = result.response else { return }
        if let http = response as? HTTPURLResponse { cookies?.store(from: http) }
        let data = result.data
        let snapshot = Forwarder.Result(data: data, response: response, error: nil, trace: result.trace)
        tellClient(isOnSessionQueue: isOnSessionQueue) { this in
            guard let response = snapshot.response else { return }
            this.client?.urlProtocol(this, didReceive: response, cacheStoragePolicy: .notAllowed)
            if let data = snapshot.data, !data.isEmpty { this.client?.urlProtocol(this, didLoad: data) }
            this.client?.urlProtocolDidFinishLoading(this)
        }
    }

    private func forwardUnaudited(_ caller: CallerSession.Details) {
        let outgoing = request.applying(caller)
        let session = URLSession(configuration: .ephemeral)
        let this = Reference(self)
        let task = session.dataTask(with: outgoing) { data, response, error in
            let result = Forwarder.Result(data: data, response: response, error: error, trace: Forwarder.Trace())
            this.value.relay(
                this.value.delivery(of: result), result, cookies: Forwarder.CookieJar(caller.configuration))
            session.finishTasksAndInvalidate()
        }
        state.withLock { $0.forwarding(task) }?.cancel()
        task.resume()
    }
}

/// An error handed to the caller's queue. `@unchecked`: errors from URLSession and RequestAudit are
/// immutable values once made.
private struct SendableError: @unchecked Sendable {
    let error: Error
    init(_ error: Error) { self.error = error }
}
