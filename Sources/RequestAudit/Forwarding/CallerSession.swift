import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Reads the configuration of the session a caller's task belongs to.
///
/// FoundationNetworking applies `httpAdditionalHeaders` and `timeoutIntervalForRequest` when it sends
/// a request, not in the request a `URLProtocol` sees, and `URLSessionTask` does not expose its
/// session. Without them a forwarded request would silently lose headers or wait for the wrong
/// timeout, so the task's stored `session` is read by reflection. Tests pin that this still works;
/// if a Foundation update hides it, forwarding falls back to the request alone.
///
/// Reflection costs 20–40 µs of a request, so it is done for a session's first task only: its
/// details are then kept on the session's work queue (a dispatch queue-specific value), where
/// `startLoading` runs, and read there for the next tasks in well under a microsecond.
enum CallerSession {
    /// What forwarding needs from the caller's session.
    final class Details: @unchecked Sendable {
        // @unchecked: the configuration is the session's own copy, only ever read; `workQueue` is weak
        // because these details are stored on that very queue.
        /// The session's configuration (headers, timeout, cookies).
        let configuration: URLSessionConfiguration?
        /// The serial queue the caller's session does all its work on.
        ///
        /// FoundationNetworking's `URLProtocolClient` reads the session's task registry, which "must
        /// only be accessed on the owning session's work queue", and its own protocols call the client
        /// there. A protocol that calls it from another thread races with the session adding and
        /// removing tasks; under load that corrupts the registry and crashes. So results are handed
        /// to the client on this queue.
        weak let workQueue: DispatchQueue?
        /// The session's `httpAdditionalHeaders`, as strings.
        let additionalHeaders: [(name: String, value: String)]
        /// The session's `timeoutIntervalForRequest`.
        let requestTimeout: TimeInterval?

        init(configuration: URLSessionConfiguration?, workQueue: DispatchQueue?) {
            self.configuration = configuration
            self.workQueue = workQueue
            additionalHeaders = (configuration?.httpAdditionalHeaders ?? [:]).compactMap { key, value in
                guard let name = key as? String, let value = value as? String else { return nil }
                return (name, value)
            }
            requestTimeout = configuration?.timeoutIntervalForRequest
        }
    }

    /// The key of the details kept on each session's work queue.
    private static let detailsKey = DispatchSpecificKey<Details>()

    /// The details of the session whose work queue (or a queue that targets it, such as a task's)
    /// this code runs on, if an earlier task of that session was read; nil otherwise.
    static func detailsOfCurrentQueue() -> Details? {
        DispatchQueue.getSpecific(key: detailsKey)
    }

    /// The configuration and work queue of the session `task` belongs to (nil fields when
    /// reflection cannot find them), read by reflection and kept on the session's work queue.
    static func details(of task: URLSessionTask?) -> Details {
        guard let session = session(of: task) else { return Details(configuration: nil, workQueue: nil) }
        let workQueue = workQueue(of: session)
        let details = Details(configuration: session.configuration, workQueue: workQueue)
        workQueue?.setSpecific(key: detailsKey, value: details)
        return details
    }

    /// The serial queue `session` does all its work on, or nil when reflection cannot find it.
    static func workQueue(of session: URLSession) -> DispatchQueue? {
        Mirror(reflecting: session).children.first { $0.label == "workQueue" }?.value as? DispatchQueue
    }

    /// The session `task` belongs to: its stored `session`, found by label in the task's class or a
    /// superclass.
    private static func session(of task: URLSessionTask?) -> URLSession? {
        guard let task else { return nil }
        var mirror: Mirror? = Mirror(reflecting: task)
        while let current = mirror {
            for child in current.children where child.label == "session" {
                if let session = child.value as? URLSession { return session }
            }
            mirror = current.superclassMirror
        }
        return nil
    }
}
