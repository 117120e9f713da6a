import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The life of one intercepted load, as a value: each transition returns what the caller must do
/// after leaving the lock.
struct LoadState: @unchecked Sendable {
    // The task and protocol held here are only acted on through the returned actions, outside the lock.

    /// What `stopLoading` must do.
    enum StopAction {
        /// Nothing is running yet, or the load already ended.
        case none
        /// Cancel the forwarded task; run `heldEnd`, the end of a load that ended while the task
        /// was suspended, which now records it as stopped.
        case cancel(URLSessionDataTask, heldEnd: (@Sendable () -> Void)?)
        /// Suspend the forwarded task: the caller suspended its task, which it may resume.
        case suspend(URLSessionDataTask)
        /// Stop Foundation's own protocol; `isSuspending` when the caller suspended the task, which
        /// it may resume.
        case stopSystemLoader(URLProtocol, isSuspending: Bool)
        /// Cancel the response handler's task.
        case cancelResponse(Task<Void, Never>)
    }

    private enum Phase {
        case idle
        /// The request is being decided; `isSuspended` while the caller has suspended its task.
        case deciding(isSuspended: Bool)
        /// The forwarding session sends the request; `isSuspended` while the caller has suspended its
        /// task (and the forwarded task with it).
        case forwarding(URLSessionDataTask, isSuspended: Bool)
        /// Foundation's own HTTP protocol loads the caller's task (see SystemLoad).
        case systemLoading(URLProtocol)
        /// A response handler answers (see RequestInfoProtocol+Respond).
        case responding(Task<Void, Never>)
        case stopped
        case finished
    }

    private var phase = Phase.idle
    /// How the forwarded load ended, held while the caller's task is suspended: it runs when the
    /// caller resumes (or stops) the task, as Foundation's own protocol reports nothing meanwhile.
    private var heldEnd: (@Sendable () -> Void)?

    /// `startLoading`: `.begin` for the first start; for a start that resumes a suspended task,
    /// `.resume(protocol)` when a system load goes on, `.resumeForwarded(task)` when a forwarded
    /// one does; `.ignore` otherwise (a load suspended while deciding goes on once decided).
    mutating func start() -> StartAction {
        switch phase {
        case .idle:
            phase = .deciding(isSuspended: false)
            return .begin
        case .deciding:
            phase = .deciding(isSuspended: false)
            return .ignore
        case .forwarding(let task, isSuspended: true):
            phase = .forwarding(task, isSuspended: false)
            if let end = heldEnd {
                heldEnd = nil
                return .endHeld(end)
            }
            return .resumeForwarded(task)
        case .systemLoading(let loader):
            return .resume(loader)
        default:
            return .ignore
        }
    }

    /// What `startLoading` must do.
    enum StartAction {
        case begin
        case resume(URLProtocol)
        case resumeForwarded(URLSessionDataTask)
        /// The forwarded load ended while the task was suspended: run its end now.
        case endHeld(@Sendable () -> Void)
        case ignore
    }

    /// What to do with a forwarded task just made.
    enum ForwardingAction {
        /// Resume it: the caller waits for it.
        case resume
        /// Leave it suspended until the caller resumes its own task.
        case hold
        /// Cancel it: the caller stopped the load meanwhile.
        case cancel
    }

    /// The forwarded task was made (not yet resumed): what to do with it. `isCallerSuspended` is the
    /// caller's task's own state: suspended at once after its resume, it may be read here before
    /// the `stopLoading` that says so, which waits on the work queue every session shares; the
    /// forwarded task is then held, as Foundation's own protocol would send nothing.
    mutating func forwarding(_ task: URLSessionDataTask, isCallerSuspended: Bool = false) -> ForwardingAction {
        guard case .deciding(let isSuspended) = phase else { return .cancel }
        let isHeld = isSuspended || isCallerSuspended
        phase = .forwarding(task, isSuspended: isHeld)
        return isHeld ? .hold : .resume
    }

    /// Foundation's own protocol is about to load the task: false when the load was stopped meanwhile.
    mutating func loadingBySystem(_ loader: URLProtocol) -> Bool {
        guard case .deciding = phase else { return false }
        phase = .systemLoading(loader)
        return true
    }

    /// A response handler's task started: false when the load was stopped meanwhile (cancel it).
    mutating func responding(_ task: Task<Void, Never>) -> Bool {
        guard case .deciding = phase else { return false }
        phase = .responding(task)
        return true
    }

    /// `stopLoading`: what to stop. A suspension keeps the load resumable: a forwarded task is
    /// suspended with the caller's, a load still being decided waits for the resumption before it
    /// sends, a system load is paused; a local answer goes on.
    mutating func stop(isSuspending: Bool) -> StopAction {
        switch phase {
        case .deciding where isSuspending:
            phase = .deciding(isSuspended: true)
            return .none
        case .forwarding(let task, let isSuspended):
            if isSuspending {
                // A task held already (never resumed, or suspended) stays as it is: one more suspension
                // would outlast the caller's one resume.
                guard !isSuspended else { return .none }
                phase = .forwarding(task, isSuspended: true)
                return .suspend(task)
            }
            phase = .stopped
            defer { heldEnd = nil }
            return .cancel(task, heldEnd: heldEnd)
        case .systemLoading(let loader):
            if !isSuspending { phase = .stopped }
            return .stopSystemLoader(loader, isSuspending: isSuspending)
        case .responding where isSuspending:
            return .none
        case .responding(let task):
            phase = .stopped
            return .cancelResponse(task)
        case .finished:
            return .none
        default:
            phase = .stopped
            return .none
        }
    }

    /// The forwarded load ended: true when the caller's task is suspended, and `end` is held until
    /// it is resumed or stopped; false when `end` is to run now.
    mutating func holdEnd(_ end: @escaping @Sendable () -> Void) -> Bool {
        guard case .forwarding(_, isSuspended: true) = phase else { return false }
        heldEnd = end
        return true
    }

    /// The load ended: true when the caller still waits for the result (it was not stopped).
    mutating func finish() -> Bool {
        if case .stopped = phase { return false }
        if case .finished = phase { return false }
        phase = .finished
        return true
    }

    /// Whether the caller still waits for events (the load was neither stopped nor finished).
    var isWaiting: Bool {
        switch phase {
        case .stopped, .finished: false
        default: true
        }
    }

    /// Whether `stopLoading` was called before the load ended.
    var isStopped: Bool {
        if case .stopped = phase { return true }
        return false
    }
}
