import AuditLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The one forwarding `URLSession` that sends intercepted requests for real.
///
/// Its requests never reach ``RequestInfoProtocol`` again: the session lists Foundation's built-in
/// protocols itself, and FoundationNetworking asks registered classes only for a request none of a
/// session's own classes takes (the built-in HTTP protocol takes every http(s) request). It follows
/// HTTP redirects like a default session, records each hop, and asks `hopVerdict` about every hop so
/// a redirect cannot lead around a `block` rule.
final class Forwarder: Sendable {
    /// What happened on the way: redirect hops and a hop a rule refused.
    struct Trace: Sendable {
        var redirects: [URL] = []
        var blockedHop: (url: URL, refusal: RequestAuditError)?
        var cookies: CookieJar?
        /// This request's own check of redirect hops (the policy it started under).
        var hopVerdict: (@Sendable (URLRequest) -> RequestAuditError?)?
    }

    /// The caller session's cookie storage and policy, applied to every hop as its own session would.
    struct CookieJar: @unchecked Sendable {
        // HTTPCookieStorage is internally synchronized.
        let storage: HTTPCookieStorage
        let acceptsCookies: Bool
        let sendsCookies: Bool

        init?(_ configuration: URLSessionConfiguration?) {
            guard let configuration, let storage = configuration.httpCookieStorage else { return nil }
            self.storage = storage
            acceptsCookies = configuration.httpCookieAcceptPolicy != .never
            sendsCookies = configuration.httpShouldSetCookies
        }

        /// Stores the cookies `response` sets.
        func store(from response: HTTPURLResponse) {
            // Most responses set no cookie: skip copying and parsing their headers.
            guard acceptsCookies, let url = response.url, response.value(forHTTPHeaderField: "Set-Cookie") != nil
            else { return }
            let fields = response.allHeaderFields.reduce(into: [String: String]()) { fields, pair in
                if let name = pair.key as? String, let value = pair.value as? String { fields[name] = value }
            }
            let cookies = HTTPCookie.cookies(withResponseHeaderFields: fields, for: url)
            if !cookies.isEmpty { storage.setCookies(cookies, for: url, mainDocumentURL: nil) }
        }

        /// `request` with the `Cookie` header its URL gets from the storage.
        func applying(to request: URLRequest) -> URLRequest {
            guard sendsCookies, let url = request.url else { return request }
            var request = request
            let header = HTTPCookie.requestHeaderFields(with: storage.cookies(for: url) ?? [])["Cookie"]
            request.setValue(header?.isEmpty == false ? header : nil, forHTTPHeaderField: "Cookie")
            return request
        }
    }

    /// The result of one forwarded request.
    struct Result: @unchecked Sendable {
        // URLResponse is an immutable snapshot once the task completed.
        var data: Data?
        var response: URLResponse?
        var error: Error?
        var trace: Trace
    }

    private let recorder: RedirectRecorder
    private let session: URLSession
    /// The session's work queue, where its delegate queue runs (nil if reflection could not find it).
    let workQueue: DispatchQueue?

    /// - Parameter hopVerdict: the refusal for a redirect hop, or nil to follow it.
    init(hopVerdict: @escaping @Sendable (URLRequest) -> RequestAuditError?) {
        recorder = RedirectRecorder(hopVerdict: hopVerdict)
        let configuration = URLSessionConfiguration.default
        // What keeps our own requests from being intercepted: this session lists Foundation's
        // built-in protocols itself, so it never consults registered classes (RequestInfoProtocol).
        // (Marking each request with URLProtocol.setProperty cost 10 µs a request in bridging copies.)
        configuration.protocolClasses = URLSessionConfiguration.default.protocolClasses
        configuration.urlCache = nil
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        // The caller's session already put its cookies in the request; its storage receives new ones.
        configuration.httpCookieStorage = nil
        configuration.httpShouldSetCookies = false
        configuration.httpCookieAcceptPolicy = .never
        configuration.httpMaximumConnectionsPerHost = 64
        let queue = OperationQueue()
        queue.name = "RequestAudit.Forwarder"
        queue.maxConcurrentOperationCount = 1
        session = URLSession(configuration: configuration, delegate: recorder, delegateQueue: queue)
        // Completions run on the session's own work queue, where the transfer finished, rather than
        // on a thread of their own: no thread wakes up between the response and the caller's work
        // queue (which goes through the same serial queue). Nothing run there may wait for a
        // session (`resume`, `dataTask`), or it would deadlock; completions and the redirect check
        // do not. OperationQueue holds its underlying queue unowned: `workQueue` keeps it.
        workQueue = CallerSession.workQueue(of: session)
        if let workQueue { queue.underlyingQueue = workQueue }
    }

    /// Starts `request`; `completion` gets the whole body at once. Cookies of
    /// redirect hops go to and come from `cookies`.
    func start(
        _ request: URLRequest, cookies: CookieJar?,
        hopVerdict: (@Sendable (URLRequest) -> RequestAuditError?)? = nil,
        completion: @escaping @Sendable (Result) -> Void
    ) -> URLSessionDataTask {
        let recorder = recorder
        let identifier = TaskIdentifier()
        let task = session.dataTask(with: request) { data, response, error in
            let trace = recorder.takeTrace(for: identifier.value)
            completion(Result(data: data, response: response, error: error, trace: trace))
        }
        identifier.value = task.taskIdentifier
        recorder.begin(task.taskIdentifier, cookies: cookies, hopVerdict: hopVerdict)
        task.resume()
        return task
    }

    /// Whether completions run on the session's work queue (false if reflection could not find it:
    /// they then run on a delegate queue of their own).
    var completesOnWorkQueue: Bool { workQueue != nil }

    /// Number of forwarded requests not yet completed.
    var inFlightCount: Int { recorder.count }

    /// Cancels everything still running and releases the session.
    func invalidate() {
        session.invalidateAndCancel()
    }

    /// Lets the completion closure find its task's trace; written before the task is resumed.
    private final class TaskIdentifier: @unchecked Sendable {
        var value = -1
    }
}

/// The forwarding session's delegate: records redirect hops per task and refuses blocked hops.
private final class RedirectRecorder: NSObject, URLSessionTaskDelegate, Sendable {
    private let traces = Locked<[Int: Forwarder.Trace]>([:])
    private let hopVerdict: @Sendable (URLRequest) -> RequestAuditError?

    init(hopVerdict: @escaping @Sendable (URLRequest) -> RequestAuditError?) {
        self.hopVerdict = hopVerdict
    }

    func begin(
        _ identifier: Int, cookies: Forwarder.CookieJar?, hopVerdict: (@Sendable (URLRequest) -> RequestAuditError?)?
    ) {
        traces.withLock { $0[identifier] = Forwarder.Trace(cookies: cookies, hopVerdict: hopVerdict) }
    }

    func takeTrace(for identifier: Int) -> Forwarder.Trace {
        traces.withLock { $0.removeValue(forKey: identifier) } ?? Forwarder.Trace()
    }

    var count: Int { traces.withLock { $0.count } }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        let check = traces.withLock { $0[task.taskIdentifier]?.hopVerdict } ?? hopVerdict
        let refusal = check(request)
        let cookies = traces.withLock { traces -> Forwarder.CookieJar? in
            guard let url = request.url else { return nil }
            if let refusal {
                traces[task.taskIdentifier]?.blockedHop = (url, refusal)
            } else {
                traces[task.taskIdentifier]?.redirects.append(url)
            }
            return traces[task.taskIdentifier]?.cookies
        }
        guard refusal == nil else { return completionHandler(nil) }
        cookies?.store(from: response)
        completionHandler(cookies?.applying(to: request) ?? request)
    }
}
