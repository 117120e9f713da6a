import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The one forwarding `URLSession` that sends intercepted requests for real.
///
/// Requests it sends are marked so ``RequestInfoProtocol`` never intercepts them again. It follows
/// HTTP redirects like a default session, records each hop, and asks `hopVerdict` about every hop so
/// a redirect cannot lead around a `block` rule.
final class Forwarder: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    // `@unchecked Sendable`: `session` is set once in init and never changed; the only mutable
    // state, `traces`, is in a Mutex.

    /// What happened on the way: redirect hops and a hop a rule refused.
    struct Trace: Sendable {
        var redirects: [URL] = []
        var blockedHop: (url: URL, refusal: RequestAuditError)?
    }

    /// The result of one forwarded request.
    struct Result: @unchecked Sendable {
        // URLResponse is an immutable snapshot once the task completed.
        var data: Data?
        var response: URLResponse?
        var error: Error?
        var trace: Trace
    }

    static let markerKey = "RequestAudit.forwarded"

    private let traces = Mutex<[Int: Trace]>([:])
    private let hopVerdict: @Sendable (URLRequest) -> RequestAuditError?
    private(set) var session: URLSession!

    /// - Parameter hopVerdict: the refusal for a redirect hop, or nil to follow it.
    init(hopVerdict: @escaping @Sendable (URLRequest) -> RequestAuditError?) {
        self.hopVerdict = hopVerdict
        super.init()
        let configuration = URLSessionConfiguration.default
        configuration.protocolClasses = []
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
        session = URLSession(configuration: configuration, delegate: self, delegateQueue: queue)
    }

    /// Whether `request` was sent by a forwarder (and so must not be intercepted).
    static func isForwarded(_ request: URLRequest) -> Bool {
        URLProtocol.property(forKey: markerKey, in: request) != nil
    }

    /// `request` marked as forwarded.
    static func marked(_ request: URLRequest) -> URLRequest {
        guard let mutable = (request as NSURLRequest).mutableCopy() as? NSMutableURLRequest else { return request }
        URLProtocol.setProperty(true, forKey: markerKey, in: mutable)
        var marked = mutable as URLRequest
        // URLRequest keeps "timeout was set" outside NSURLRequest; without it the session's own
        // timeout would apply instead of the caller's.
        marked.timeoutInterval = request.timeoutInterval
        return marked
    }

    /// Starts `request` (already marked); `completion` gets the whole body at once.
    func start(_ request: URLRequest, completion: @escaping @Sendable (Result) -> Void) -> URLSessionDataTask {
        let box = TaskBox()
        let task = session.dataTask(with: request) { data, response, error in
            let trace = self.traces.withLock { $0.removeValue(forKey: box.identifier) } ?? Trace()
            completion(Result(data: data, response: response, error: error, trace: trace))
        }
        box.identifier = task.taskIdentifier
        traces.withLock { $0[task.taskIdentifier] = Trace() }
        task.resume()
        return task
    }

    /// Number of forwarded requests not yet completed.
    var inFlightCount: Int { traces.withLock { $0.count } }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        let refusal = hopVerdict(request)
        traces.withLock { traces in
            guard let url = request.url else { return }
            if let refusal {
                traces[task.taskIdentifier]?.blockedHop = (url, refusal)
            } else {
                traces[task.taskIdentifier]?.redirects.append(url)
            }
        }
        completionHandler(refusal == nil ? request : nil)
    }

    /// Lets the completion closure find its task's trace; written before the task can complete.
    private final class TaskBox: @unchecked Sendable {
        var identifier = -1
    }

    /// Cancels everything still running and releases the session.
    func invalidate() {
        session.invalidateAndCancel()
    }
}
