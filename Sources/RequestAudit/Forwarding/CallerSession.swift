import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Reads the session a caller's task belongs to, and keeps what forwarding needs of it.
///
/// `URLSessionTask` does not expose its session, yet a forwarded request must go out with that
/// session's settings (its additional headers, timeouts, connections per host, proxy) and its
/// events must reach the caller as that session delivers them. So the task's stored `session` is
/// read by reflection (``PlatformInternals``), and the session gets a forwarding session of its own
/// made from its configuration (``Forwarder``). Tests pin that this still works; if a Foundation
/// update hides it, `install()` throws.
///
/// Reflection costs 20–40 µs of a request, so it is done for a session's first task only: its
/// details are then kept on the session's work queue (a dispatch queue-specific value), where
/// `startLoading` runs, and read there for the next tasks in well under a microsecond. They live as
/// long as the work queue, so the forwarding session is released with the caller's session.
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
        /// The session's configuration (its cookie and credential storage; the forwarding session's settings).
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
        /// The forwarding session that sends this session's requests, with its settings.
        let forwarder: Forwarder
        /// The headers the session adds to each request it sends, which its requests are decided with.
        let additionalHeaders: [String: String]

        init(session: URLSession?, workQueue: DispatchQueue?) {
            self.session = session
            self.configuration = session?.configuration
            self.workQueue = workQueue
            self.taskRegistry = session.flatMap(PlatformInternals.taskRegistry(of:))
            forwarder = Forwarder(for: configuration)
            additionalHeaders = configuration?.sentAdditionalHeaders ?? [:]
        }

        /// How `task` was made, from the session's task registry; nil when it cannot be read.
        ///
        /// Whether a completion handler's task also has a task delegate matters only for upload
        /// progress, so it is read only when `readsTaskDelegate` (the request has a body), and
        /// reported as absent otherwise. Call it on the session's work queue (the registry is only
        /// touched there), as `startLoading` does.
        func behaviour(of task: URLSessionTask, readsTaskDelegate: Bool = true) -> Behaviour? {
            guard let taskRegistry else { return nil }
            // A data task of a session without a delegate, and without a task delegate of its own,
            // either has a completion handler or nothing observes it: delivered as to a completion
            // handler, both see what they would directly, and the registry's entry (named by a
            // Mirror, tens of microseconds on the queue every session shares) need not be read.
            if let session, session.delegate == nil, task.delegate == nil, task is URLSessionDataTask,
                !(task is URLSessionUploadTask)
            {
                return .dataCompletionHandler(hasTaskDelegate: false)
            }
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
