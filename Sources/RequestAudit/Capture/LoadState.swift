import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The life of one intercepted load, as a value: each transition returns what the caller must do
/// after leaving the lock.
struct LoadState: @unchecked Sendable {
    // URLSessionDataTask is only cancelled through the returned action, outside the lock.
    private enum Phase {
        case idle
        case deciding
        case forwarding(URLSessionDataTask)
        case stopped
        case finished
    }

    private var phase = Phase.idle

    /// `startLoading`: true when the load should run (only the first start does).
    mutating func start() -> Bool {
        guard case .idle = phase else { return false }
        phase = .deciding
        return true
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

    /// `stopLoading`: the forwarded task to cancel, if one is running.
    mutating func stop() -> URLSessionDataTask? {
        defer { if case .finished = phase {} else { phase = .stopped } }
        if case .forwarding(let task) = phase { return task }
        return nil
    }

    /// The load ended: true when the caller still waits for the result (it was not stopped).
    mutating func finish() -> Bool {
        if case .stopped = phase { return false }
        if case .finished = phase { return false }
        phase = .finished
        return true
    }

    /// Whether `stopLoading` was called before the load ended.
    var isStopped: Bool {
        if case .stopped = phase { return true }
        return false
    }
}
