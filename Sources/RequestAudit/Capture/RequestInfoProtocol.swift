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
/// What the caller sees is what it would see without RequestAudit, for every way a task can be made:
/// - data tasks with a delegate (the task's or its session's) go through the forwarding session, and
///   each event is relayed as it happens: the response when its header is complete, each body chunk
///   as it arrives, every redirect put to the caller's `willPerformHTTPRedirection` and checked by
///   the policy, every authentication challenge put to the caller's delegate or answered from its
///   credential storage;
/// - data tasks without a delegate (a completion handler, `async`, `URLSession.shared`) go through
///   the forwarding session too, delivered as their caller expects them (the whole body at once),
///   every redirect hop checked by the policy;
/// - download and upload tasks, whose file or body lives in the task out of a protocol's reach, are
///   loaded by Foundation's own HTTP protocol inside this one, after the decision (see SystemLoad).
public final class RequestInfoProtocol: URLProtocol {
    // `URLProtocol` is not Sendable (and Linux marks the conformance unavailable); every mutable field
    // of this class is in `state`, guarded by a lock (`Locked`, a Mutex), so it crosses tasks inside `Reference`.

    /// The installed auditor.
    static let active = Locked<Auditor?>(nil)

    let state = Locked(LoadState())
    /// Where `startLoading` hands requests on to be decided and forwarded: four serial queues,
    /// taken in turn.
    ///
    /// Serial queues run on libdispatch's overcommit threads, so a hop never waits behind the
    /// caller's Swift tasks, which share the global concurrent queue's few threads; and hops that
    /// arrive while a queue drains join it without waking another thread. A hop's work is short (a
    /// decision) or waits for the session queue every session shares (creating and resuming the
    /// forwarded task): with four queues, four hops can wait for it at once, so the next is ready
    /// when it frees (the measurements behind this are in `Benchmarks/RESULTS.md`).
    private static let hopQueues = (0..<4).map { DispatchQueue(label: "RequestAudit.RequestInfoProtocol.hop\($0)") }
    private static let hopTurn = Atomic<Int>(0)

    /// The hop queue whose turn it is (the count is a power of two, so a wrapped turn still picks one).
    private static var nextHopQueue: DispatchQueue {
        hopQueues[hopTurn.wrappingAdd(1, ordering: .relaxed).oldValue & (hopQueues.count - 1)]
    }
    /// The caller session's work queue, where the client is told of results (see CallerSession).
    private let clientQueue = Locked<DispatchQueue?>(nil)

    /// Whether this protocol handles `request`: http(s), or a scheme in the installed auditor's
    /// `AuditorConfiguration.customSchemes`.
    ///
    /// Nothing is decided here: FoundationNetworking may ask more than once per task, and a decision
    /// leaves a trace (counted, published, logged). `startLoading` decides each request once.
    public override class func canInit(with request: URLRequest) -> Bool {
        guard let scheme = request.url?.scheme else { return false }
        let isHTTP = isHTTPScheme(scheme)
        return active.withLock { auditor in
            guard let auditor else { return false }
            return isHTTP || auditor.configuration.customSchemes.contains(scheme.lowercased())
        }
    }

    /// Whether `scheme` is `http` or `https` in any case, compared byte by byte: FoundationNetworking
    /// asks ``canInit(with:)`` on every task's path, where a Foundation case-insensitive comparison
    /// (through `NSString`) took microseconds.
    static func isHTTPScheme(_ scheme: String) -> Bool {
        var bytes = scheme.utf8.makeIterator()
        for expected in "http".utf8 {
            guard let byte = bytes.next(), byte | 0x20 == expected else { return false }
        }
        guard let fifth = bytes.next() else { return true }
        return fifth | 0x20 == UInt8(ascii: "s") && bytes.next() == nil
    }

    /// Returns `request` unchanged.
    public override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    /// How a load reaches the network.
    enum Route: Sendable, Equatable {
        /// Through the forwarding session, every event relayed to a caller of this behaviour.
        case relay(CallerSession.Behaviour)
        /// By Foundation's own HTTP protocol, loading the caller's task itself (see SystemLoad):
        /// downloads and uploads, whose file or body lives in the task (read only for a recording).
        case system
    }

    /// Decides and starts the request off the session's work queue.
    public override func startLoading() {
        switch state.withLock({ $0.start() }) {
        case .ignore: return
        case .resume(let loader): return loader.startLoading()
        case .resumeForwarded(let task): return Self.control(task) { $0.resume() }
        case .endHeld(let end): return end()
        case .begin: break
        }
        let this = Reference(self)
        // This runs on the caller session's work queue, which keeps the session's details after its
        // first task, and where its task registry (how the task was made) may be read.
        let caller = readCallerSession(CallerSession.detailsOfCurrentQueue())
        guard let auditor = Self.active.withLock({ $0 }) else {
            // Uninstalled between canInit and now: behave as if RequestAudit were not there.
            return startSystemLoad(nil, caller: caller, checkingHops: nil)
        }
        #if canImport(FoundationNetworking)
            // The client must be told on the caller session's work queue: a call from another
            // thread races with the session's task registry. Were that queue unreadable for this
            // session, the request is refused here, where this code runs on it, rather than relayed
            // with calls from another thread.
            guard caller.workQueue != nil else { return refuseUnreadableSession(auditor, caller: caller) }
        #endif
        let route = route(for: caller, relaysUploads: auditor.usesRecording)
        let delivery = localDelivery(for: caller, route: route)
        // Everything else happens off this queue, which every session's work goes through.
        // A dispatch queue rather than a task: the hop is on every request's path, and the
        // cooperative pool can be busy with the caller's own tasks (only a warning's question
        // needs async, and `run` starts a task for it). See `hopQueues`.
        Self.nextHopQueue.async {
            this.value.run(auditor, caller: caller, route: route, delivery: delivery)
        }
    }

    /// The route for this protocol's task (read on the caller session's work queue). With
    /// `relaysUploads` (a recording is made or replayed, which must see the exchange whole), an
    /// upload task made with its body's bytes or file is relayed as an upload of that body.
    private func route(for caller: CallerSession.Details, relaysUploads: Bool) -> Route {
        guard let task, !(task is URLSessionDownloadTask) else { return .system }
        if task is URLSessionUploadTask {
            guard relaysUploads, PlatformInternals.knownBody(of: task) != nil else { return .system }
            return relayRoute(for: task, caller: caller, hasBody: true)
        }
        return relayRoute(for: task, caller: caller, hasBody: request.hasBody)
    }

    /// The relay of a data task, by how the caller made it (read on the session's work queue), or
    /// the system route when that cannot be read.
    private func relayRoute(for task: URLSessionTask, caller: CallerSession.Details, hasBody: Bool) -> Route {
        guard let behaviour = caller.behaviour(of: task, readsTaskDelegate: hasBody),
            behaviour != .downloadCompletionHandler
        else { return .system }
        return .relay(behaviour)
    }

    /// How a local response reaches this protocol's caller (read on the caller session's work
    /// queue): as the relayed body would, or for an upload task as a data task's body; nil for a
    /// download task, which FoundationNetworking completes only for its own protocol.
    private func localDelivery(for caller: CallerSession.Details, route: Route) -> CallerSession.Behaviour? {
        if case .relay(let behaviour) = route { return behaviour }
        guard let task = task as? URLSessionUploadTask else { return nil }
        return caller.behaviour(of: task)
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
    struct Reference: @unchecked Sendable {
        let value: RequestInfoProtocol
        init(_ value: RequestInfoProtocol) { self.value = value }
    }

    /// Stops the load: cancels the forwarded request (the session reports the cancellation to the
    /// caller itself), or stops Foundation's own protocol where it loads the task. When the caller
    /// suspended its task, the load is suspended instead, and ``startLoading()`` resumes it. A stop
    /// that comes while the task runs is a suspension its caller has undone already (FoundationNetworking
    /// delivers a suspension late when the task's protocol waits for its session's URLCache): nothing
    /// to do.
    public override func stopLoading() {
        let taskState = task?.state
        guard taskState != .running else { return }
        let isSuspending = taskState == .suspended
        switch state.withLock({ $0.stop(isSuspending: isSuspending) }) {
        case .none:
            return
        case .cancel(let task, let heldEnd):
            Self.control(task) { $0.cancel() }
            heldEnd?()
        case .suspend(let task):
            Self.control(task) { $0.suspend() }
        case .cancelResponse(let task):
            task.cancel()
        case .stopSystemLoader(let loader, let isSuspending):
            // Foundation's protocol expects to be stopped right here, on the session's work queue.
            loader.stopLoading()
            if !isSuspending { (loader.client as? SystemLoad)?.stopped(loader.task) }
        }
    }

    /// Where forwarded tasks are resumed, suspended and cancelled, in the order the caller's task was:
    /// `startLoading` and `stopLoading` run on the work queue every session shares, where touching a
    /// task (which waits for that queue) deadlocks.
    private static let controlQueue = DispatchQueue(label: "RequestAudit.RequestInfoProtocol.control")

    /// Runs `change` on `task` on the control queue.
    private static func control(
        _ task: URLSessionDataTask, _ change: @escaping @Sendable (URLSessionDataTask) -> Void
    ) {
        let forwarded = ForwardedTask(task)
        controlQueue.async { change(forwarded.task) }
    }

    /// A forwarded task crossing to the control queue; its `resume`, `suspend` and `cancel` are
    /// thread-safe.
    private struct ForwardedTask: @unchecked Sendable {
        let task: URLSessionDataTask
        init(_ task: URLSessionDataTask) { self.task = task }
    }

    private func run(
        _ auditor: Auditor, caller: CallerSession.Details, route: Route, delivery: CallerSession.Behaviour?
    ) {
        // Foundation's own protocol follows its own redirects, and a download cannot be answered
        // locally: what this load cannot carry out is refused (fails closed).
        var capabilities = FrontEndCapabilities()
        if route != .system { capabilities.insert(.redirect) }
        if delivery != nil { capabilities.insert(.respond) }
        let audited = auditor.admit(request, caller: caller, capabilities: capabilities)
        act(on: audited.admission, audited, auditor, caller: caller, route: route, delivery: delivery)
    }

    /// Carries out `admission` by `route` (off the session's work queue).
    private func act(
        on admission: Admission, _ audited: AuditedRequest, _ auditor: Auditor, caller: CallerSession.Details,
        route: Route, delivery: CallerSession.Behaviour?
    ) {
        switch admission {
        case .refuse(let refusal):
            fail(with: RequestAuditError(refusal).urlError, as: refusal.outcomeKind, audited)
        case .warn:
            // The warning handler answers in its own time; what it says is carried out then.
            let this = Reference(self)
            Task {
                let resolved = await audited.resolveWarning(askHandler: true)
                this.value.act(on: resolved, audited, auditor, caller: caller, route: route, delivery: delivery)
            }
        case .send(let target?):
            var (redirected, body) = withRecordableBody(request, auditor)
            redirected.url = URL(string: target) ?? request.url
            // A Host header the app set names the request's server, not the rule's target.
            redirected.setValue(nil, forHTTPHeaderField: "Host")
            forward(redirected, auditor, audited, caller, route, body: body)
        case .send(nil):
            proceed(auditor, audited, caller, route, delivery: delivery)
        case .respond:
            respond(audited, delivery: delivery)
        }
    }

    /// Sends the request unchanged by the route it takes; a custom scheme's request fails as it
    /// would without RequestAudit.
    private func proceed(
        _ auditor: Auditor, _ audited: AuditedRequest, _ caller: CallerSession.Details, _ route: Route,
        delivery: CallerSession.Behaviour?
    ) {
        guard request.url.map(Self.isHTTP) ?? false else {
            return failUnsupported(audited)
        }
        switch route {
        case .relay(let behaviour):
            let (outgoing, body) = withRecordableBody(request, auditor)
            if let replay = auditor.replay,
                answerFromRecording(
                    replay, body: body, delivery: behaviour, audited: audited,
                    checkingHops: auditor.hopVerdict(audited.decision.policy, caller: caller))
            {
                return
            }
            guard let cache = auditor.cache else {
                return forward(outgoing, auditor, audited, caller, route, body: body)
            }
            if let url = invalidatedURL() {
                return forward(
                    outgoing, auditor, audited, caller, route, body: body, cache: .invalidating(cache, url: url))
            }
            guard let lookup = cacheRequest(audited) else {
                return forward(outgoing, auditor, audited, caller, route, body: body)
            }
            let this = Reference(self)
            relayThroughCache(
                cache, lookup, request: outgoing, behaviour: behaviour, forwarder: caller.forwarder,
                send: { request, use in
                    this.value.forward(request, auditor, audited, caller, route, body: body, cache: use)
                },
                audited: audited, recorder: auditor.recorder)
        case .system:
            let hopVerdict = auditor.hopVerdict(audited.decision.policy, caller: caller)
            // A download, or an upload streamed from its delegate: a recording cannot see it whole.
            if let replay = auditor.replay,
                answerFromRecording(
                    replay, body: request.recordedBody, delivery: delivery, audited: audited, checkingHops: hopVerdict)
            {
                return
            }
            startSystemLoad(audited, caller: caller, checkingHops: hopVerdict)
        }
    }

    /// Refuses the request with `refusal` (recorded as blocked), before anything was sent.
    func refuse(_ refusal: RequestAuditError, _ audited: AuditedRequest) {
        fail(with: refusal.urlError, as: .blocked, audited)
    }

    /// Ends the load with `error` before anything was sent: records it as `kind` (or `cancelled`
    /// when the caller stopped the load), then tells the caller — on its work queue, or right here
    /// when `isOnWorkQueue`. The record is handed to the pipeline before the caller hears of it.
    func fail(
        with error: URLError, as kind: OutcomeSnapshot.Kind, _ audited: AuditedRequest, isOnWorkQueue: Bool = false
    ) {
        let isDelivered = state.withLock { $0.finish() }
        audited.finish(Outcome(isDelivered ? kind : .cancelled, failure: Outcome.Failure(error)))
        guard isDelivered else { return }
        if isOnWorkQueue { return client?.urlProtocol(self, didFailWithError: error) ?? () }
        tellClient { this in this.client?.urlProtocol(this, didFailWithError: error) }
    }

    /// Refuses the request from the caller session's work queue (where `startLoading` runs) when
    /// that queue cannot be read: decided and recorded as a failure, the caller told at once.
    private func refuseUnreadableSession(_ auditor: Auditor, caller: CallerSession.Details) {
        let error = RequestAuditError.unsupportedPlatform("the caller session's work queue is not readable").urlError
        fail(with: error, as: .failure, auditor.admit(request, caller: caller, capabilities: []), isOnWorkQueue: true)
    }

    /// Whether `url` is http or https.
    private static func isHTTP(_ url: URL) -> Bool {
        url.scheme.map(isHTTPScheme) ?? false
    }

    /// Ends a custom scheme's request that no rule answered as FoundationNetworking ends it
    /// without RequestAudit: `URLError(.unsupportedURL)`; recorded as a failure.
    private func failUnsupported(_ audited: AuditedRequest) {
        let error = URLError(.unsupportedURL, userInfo: request.url.map { [NSURLErrorFailingURLErrorKey: $0] } ?? [:])
        fail(with: error, as: .failure, audited)
    }

    /// Runs `message` on the caller session's work queue, or right here when `isOnSessionQueue`: the
    /// forwarding session's work queue targets the same serial queue as the caller's, so nothing
    /// else of the caller's session runs meanwhile. (Where there is no work queue to read — not
    /// FoundationNetworking — the message runs here; on Linux `startLoading` refuses a session
    /// whose work queue it cannot read.)
    func tellClient(
        isOnSessionQueue: Bool = false, _ message: @escaping @Sendable (RequestInfoProtocol) -> Void
    ) {
        let this = Reference(self)
        guard !isOnSessionQueue, let queue = clientQueue.withLock({ $0 }) else { return message(self) }
        queue.async { message(this.value) }
    }

    /// Runs `message` as ``tellClient(isOnSessionQueue:_:)`` does, if the caller still waits for
    /// events (it neither stopped the load nor got its end).
    func tellClientIfWaiting(
        isOnSessionQueue: Bool, _ message: @escaping @Sendable (RequestInfoProtocol) -> Void
    ) {
        guard state.withLock({ $0.isWaiting }) else { return }
        tellClient(isOnSessionQueue: isOnSessionQueue, message)
    }

    /// Holds `end` while the caller's task is suspended (see ``LoadState/holdEnd(_:)``): true when held.
    func holdEnd(_ end: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { $0.holdEnd(end) }
    }

    /// Claims the right to tell the caller how the load ended: false when it stopped the load.
    func claimEnd() -> Bool {
        state.withLock { $0.finish() }
    }

    /// Relays `request` (whose body is `body`, for a recording) by `route`.
    private func forward(
        _ request: URLRequest, _ auditor: Auditor, _ audited: AuditedRequest, _ caller: CallerSession.Details,
        _ route: Route, body: RecordedRequestBody?, cache: RelayedLoad.CacheUse? = nil
    ) {
        guard case .relay(let behaviour) = route else { return }
        let load = RelayedLoad(
            owner: self, caller: caller, behaviour: behaviour, outgoing: request, body: body, auditor: auditor,
            audited: audited, cache: cache)
        // An upload task (relayed for a recording) goes on as an upload of the same body.
        let upload = (self.task as? URLSessionUploadTask).flatMap(PlatformInternals.knownBody(of:))
        let task = caller.forwarder.task(for: request, uploading: upload, observer: load)
        // Made off the work queue (this runs on a hop queue), so the task is touched right here. A
        // suspension decided meanwhile may reach the task first: URLSessionTask counts suspensions,
        // so its suspend and this resume leave it suspended in either order.
        let isCallerSuspended = self.task?.state == .suspended
        switch state.withLock({ $0.forwarding(task, isCallerSuspended: isCallerSuspended) }) {
        case .resume: task.resume()
        case .hold: break
        case .cancel: task.cancel()
        }
    }

    /// Has Foundation's own HTTP protocol load the caller's task, on the caller session's work queue,
    /// recording what it does in `audit` (nil: not audited, RequestAudit was uninstalled meanwhile).
    private func startSystemLoad(
        _ audit: AuditedRequest?, caller: CallerSession.Details,
        checkingHops hopVerdict: (@Sendable (URLRequest) -> RequestAuditError?)?
    ) {
        let this = Reference(self)
        let start: @Sendable () -> Void = {
            let owner = this.value
            // A stop that comes after the end (a suspension racing the task's completion) must not
            // reach Foundation's protocol, which stops the process for a task neither suspended nor failed.
            let ended: @Sendable () -> Void = { _ = this.value.state.withLock { $0.finish() } }
            guard let task = owner.task, let client = owner.client,
                let loader = SystemLoad.makeLoader(
                    for: task, client: client, audit: audit, checkingHops: hopVerdict, onEnd: ended)
            else {
                audit?.finish(Outcome(.failure))
                return owner.tellClient { this in
                    this.client?.urlProtocol(this, didFailWithError: URLError(.unsupportedURL))
                }
            }
            guard owner.state.withLock({ $0.loadingBySystem(loader) }) else {
                return audit?.finish(Outcome(.cancelled)) ?? ()
            }
            loader.startLoading()
        }
        if let queue = caller.workQueue { queue.async(execute: start) } else { start() }
    }
}

/// An error handed to the caller's queue. `@unchecked`: errors from URLSession and RequestAudit are
/// immutable values once made.
struct SendableError: @unchecked Sendable {
    let error: Error
    init(_ error: Error) { self.error = error }
}
