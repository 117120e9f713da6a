import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Reads the configuration of the session a caller's task belongs to.
///
/// FoundationNetworking applies `httpAdditionalHeaders` and `timeoutIntervalForRequest` when it sends
/// a request, not in the request a `URLProtocol` sees, and `URLSessionTask` does not expose its
/// session. Without them a forwarded request would silently lose headers or wait for the wrong
/// timeout, so the task's stored `session` is read by reflection (``PlatformInternals``). Tests pin
/// that this still works; if a Foundation update hides it, forwarding falls back to the request
/// alone.
///
/// Reflection costs 20–40 µs of a request, so it is done for a session's first task only: its
/// details are then kept on the session's work queue (a dispatch queue-specific value), where
/// `startLoading` runs, and read there for the next tasks in well under a microsecond.
///
/// What a caller's task observes also depends on how it was made (a delegate, a completion
/// handler, a download): FoundationNetworking keeps that in the session's task registry, read here
/// by reflection on the session's work queue (see ``Behaviour``).
enum CallerSession {
    /// How FoundationNetworking delivers a caller task's events, from its session's task registry.
    enum Behaviour: Sendable, Equatable {
        /// The session's or task's delegate gets every event, body chunks included
        /// (`dataTask(with:)` on a session with a delegate).
        case delegate
        /// No delegate and no completion handler: nothing observes the body.
        case noDelegate
        /// A completion handler gets the whole body (`dataTask(with:completionHandler:)`, `async data`);
        /// `hasTaskDelegate` when a task delegate also gets the response and redirect callbacks.
        case dataCompletionHandler(hasTaskDelegate: Bool)
        /// A completion handler gets a downloaded file.
        case downloadCompletionHandler

        /// Whether the caller sees the body chunk by chunk, as it arrives.
        var receivesChunks: Bool {
            switch self {
            case .delegate, .noDelegate: true
            case .dataCompletionHandler, .downloadCompletionHandler: false
            }
        }
    }

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
        /// The session itself, for its delegate and delegate queue (weak: these details are kept on its
        /// work queue, which the session owns).
        weak let session: URLSession?
        /// The session's task registry (FoundationNetworking's `_TaskRegistry`), read on the work queue.
        private let taskRegistry: AnyObject?
        /// The session's `httpAdditionalHeaders`, as strings.
        let additionalHeaders: [(name: String, value: String)]
        /// The session's `timeoutIntervalForRequest`.
        let requestTimeout: TimeInterval?

        init(session: URLSession?, workQueue: DispatchQueue?) {
            self.session = session
            self.configuration = session?.configuration
            self.workQueue = workQueue
            self.taskRegistry = session.flatMap(PlatformInternals.taskRegistry(of:))
            let configuration = self.configuration
            additionalHeaders = (configuration?.httpAdditionalHeaders ?? [:]).compactMap { key, value in
                guard let name = key as? String, let value = value as? String else { return nil }
                return (name, value)
            }
            requestTimeout = configuration?.timeoutIntervalForRequest
        }

        /// How `task` was made, from the session's task registry; nil when it cannot be read.
        ///
        /// Whether a completion handler's task also has a task delegate matters only for upload
        /// progress, so it is read only when `readsTaskDelegate` (the request has a body), and
        /// reported as absent otherwise. Call it on the session's work queue (the registry is only
        /// touched there), as `startLoading` does.
        func behaviour(of task: URLSessionTask, readsTaskDelegate: Bool = true) -> Behaviour? {
            guard let taskRegistry else { return nil }
            return PlatformInternals.behaviour(
                of: task.taskIdentifier, in: taskRegistry,
                sessionHasDelegate: session?.delegate is URLSessionTaskDelegate, readsTaskDelegate: readsTaskDelegate)
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
        guard let session = PlatformInternals.session(of: task) else { return Details(session: nil, workQueue: nil) }
        let workQueue = PlatformInternals.workQueue(of: session)
        let details = Details(session: session, workQueue: workQueue)
        workQueue?.setSpecific(key: detailsKey, value: details)
        return details
    }

}
