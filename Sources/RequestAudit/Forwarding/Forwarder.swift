import AuditLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a forwarded task reports, event by event, to the load it carries out.
///
/// Every method runs on the forwarding session's work queue, in the order the transfer produced
/// the events; a method that takes an `answer` may answer later, from any thread.
protocol ForwardedLoadObserver: AnyObject, Sendable {
    /// A response arrived (its header is complete). Several arrive for one task when an
    /// authentication challenge is answered and the request is sent again.
    func forwarded(response: URLResponse)
    /// A chunk of the current response's body arrived.
    func forwarded(data: Data)
    /// The server redirects: `answer` the request to follow, or nil to stop at `response`.
    func forwarded(
        redirect response: HTTPURLResponse, proposed request: URLRequest,
        answer: @escaping @Sendable (URLRequest?) -> Void)
    /// The server asks for credentials: `answer` as a session delegate would.
    func forwarded(
        challenge: URLAuthenticationChallenge,
        answer: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void)
    /// Body bytes went out.
    func forwarded(sentBodyBytes bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64)
    /// The body stream must start again (a redirect that keeps the body): `answer` a new stream.
    func forwardedNeedsNewBodyStream(answer: @escaping @Sendable (InputStream?) -> Void)
    /// The task ended, with an error or after the last response's body.
    func forwardedCompletion(error: Error?)
}

/// The forwarding `URLSession` of one caller session: it sends that session's intercepted requests
/// for real, with the caller's own settings.
///
/// Each caller session gets a forwarding session of its own (kept with its details, see
/// ``CallerSession``), made from a copy of the caller's configuration, so Foundation applies that
/// session's settings as it would directly: its connections per host (its pool stays its own), its
/// request and resource timeouts with the "set on the request wins" rule, its proxy dictionary, its
/// additional headers, TLS and pipelining settings. Only what RequestAudit does itself is changed:
/// cookies and credentials come from the caller's storage through the relay, and nothing is cached.
///
/// Its requests never reach ``RequestInfoProtocol`` again: the session lists its protocols itself
/// (``ForwardedHTTPProtocol``, then Foundation's built-in ones), and FoundationNetworking asks
/// registered classes only for a request none of a session's own classes takes (the first takes
/// every http(s) request). Its tasks
/// are delegate-based, so every event (response, each body chunk, redirect, challenge, upload
/// progress) reaches the ``ForwardedLoadObserver`` of the load it carries out, as it happens.
final class Forwarder: Sendable {
    private let router: ForwardingDelegate
    private let session: URLSession
    /// The session's work queue, where its delegate calls run (nil if reflection could not find it).
    let workQueue: DispatchQueue?

    /// A forwarding session with the settings of `callerConfiguration` (the default configuration's
    /// when nil).
    init(for callerConfiguration: URLSessionConfiguration? = nil) {
        router = ForwardingDelegate()
        let configuration =
            (callerConfiguration?.copy() as? URLSessionConfiguration) ?? URLSessionConfiguration.default
        // What keeps our own requests from being intercepted: this session lists its protocols itself,
        // so it never consults registered classes (RequestInfoProtocol). http and https go to
        // Foundation's own protocol through ForwardedHTTPProtocol, which keeps a suspension that
        // lands as a transfer completes from stopping the process.
        configuration.protocolClasses =
            [ForwardedHTTPProtocol.self] + (URLSessionConfiguration.default.protocolClasses ?? [])
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        // The caller's session already put its cookies in the request; its storage receives new ones.
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        // Credentials come from the caller's session (its delegate or its storage), never from ours.
        configuration.urlCredentialStorage = nil
        let queue = InlineDelegateQueue()
        session = URLSession(configuration: configuration, delegate: router, delegateQueue: queue)
        // Delegate calls run in place on the session's work queue, where the transfer produced them
        // (see InlineDelegateQueue): each chunk reaches the caller before the next one is read, and
        // no thread wakes up between them. Nothing run there may wait for a session (`resume`,
        // `dataTask`), or it would deadlock.
        workQueue = PlatformInternals.workQueue(of: session)
        if let workQueue { queue.attach(to: workQueue) }
    }

    deinit {
        // Its caller session is gone, and with it every load it carried: the session lets go of its
        // delegate once invalidated.
        session.finishTasksAndInvalidate()
    }

    /// A task for `request` that reports its events to `observer` (held until the task completes),
    /// not yet resumed: the load resumes it unless its caller suspended it meanwhile. With
    /// `uploading`, an upload task of that body, which Foundation sends as it sends the caller's.
    func task(
        for request: URLRequest, uploading upload: PlatformInternals.KnownBody? = nil,
        observer: any ForwardedLoadObserver
    ) -> URLSessionDataTask {
        let task: URLSessionDataTask =
            switch upload {
            case .data: session.uploadTask(with: request, from: upload?.bytes ?? Data())
            case .file(let file): session.uploadTask(with: request, fromFile: file)
            case nil: session.dataTask(with: request)
            }
        router.begin(task.taskIdentifier, observer: observer)
        return task
    }

    /// Whether delegate calls run on the session's work queue (false if reflection could not find
    /// it: they then run on a delegate queue of their own).
    var completesOnWorkQueue: Bool { workQueue != nil }

    /// The settings the forwarding session sends with.
    var configuration: URLSessionConfiguration { session.configuration }

    /// Cancels everything still running and releases the session.
    func invalidate() {
        session.invalidateAndCancel()
    }
}

/// The forwarding session's delegate: hands each task's events to the observer of its load.
private final class ForwardingDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private let observers = Locked<[Int: any ForwardedLoadObserver]>([:])

    func begin(_ identifier: Int, observer: any ForwardedLoadObserver) {
        observers.withLock { $0[identifier] = observer }
    }

    private func observer(of task: URLSessionTask) -> (any ForwardedLoadObserver)? {
        observers.withLock { $0[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping @Sendable (URLSession.ResponseDisposition) -> Void
    ) {
        observer(of: dataTask)?.forwarded(response: response)
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        observer(of: dataTask)?.forwarded(data: data)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        guard let observer = observer(of: task) else { return completionHandler(request) }
        observer.forwarded(redirect: response, proposed: request, answer: completionHandler)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        guard let observer = observer(of: task) else { return completionHandler(.performDefaultHandling, nil) }
        observer.forwarded(challenge: challenge, answer: completionHandler)
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didSendBodyData bytesSent: Int64, totalBytesSent: Int64,
        totalBytesExpectedToSend: Int64
    ) {
        observer(of: task)?.forwarded(
            sentBodyBytes: bytesSent, totalBytesSent: totalBytesSent, totalBytesExpectedToSend: totalBytesExpectedToSend
        )
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask,
        needNewBodyStream completionHandler: @escaping @Sendable (InputStream?) -> Void
    ) {
        guard let observer = observer(of: task) else { return completionHandler(nil) }
        observer.forwardedNeedsNewBodyStream(answer: completionHandler)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let observer = observers.withLock { $0.removeValue(forKey: task.taskIdentifier) }
        observer?.forwardedCompletion(error: error)
    }
}
