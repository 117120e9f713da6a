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
        /// Cancel the forwarded task.
        case cancel(URLSessionDataTask)
        /// Stop Foundation's own protocol; `isSuspending` when the caller suspended the task, which
        /// it may resume.
        case stopSystemLoader(URLProtocol, isSuspending: Bool)
        /// Cancel the response handler's task.
        case cancelResponse(Task<Void, Never>)
    }

    private enum Phase {
        case idle
        case deciding
        case forwarding(URLSessionDataTask)
        /// Foundation's own HTTP protocol loads the caller's task (see SystemLoad).
        case systemLoading(URLProtocol)
        /// A response handler answers (see RequestInfoProtocol+Respond).
        case responding(Task<Void, Never>)
        case stopped
        case finished
    }

    private var phase = Phase.idle

    /// `startLoading`: `.begin` for the first start, `.resume(protocol)` when a suspended system load
    /// goes on, `.ignore` otherwise.
    mutating func start() -> StartAction {
        switch phase {
        case .idle:
            phase = .deciding
            return .begin
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
        case ignore
    }

    /// The forwarded task was created; returns it when the load was stopped meanwhile, to cancel.
    mutating func forwarding(_ task: URLSessionDataTask) -> URLSessionDataTask? {
        switch phase {
        case .deciding:
            phase = .forwarding(task)
            return nil
        default:
            return task
        }
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

    /// `stopLoading`: what to stop. A suspension of a system load keeps it resumable.
    mutating func stop(isSuspending: Bool) -> StopAction {
        switch phase {
        case .forwarding(let task):
            phase = .stopped
            return .cancel(task)
        case .systemLoading(let loader):
            if !isSuspending { phase = .stopped }
            return .stopSystemLoader(loader, isSuspending: isSuspending)
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
