import AuditLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The task delegate RequestAudit lends a caller's data task that has none, while Foundation's own
/// HTTP protocol loads it (see ``SystemLoad``): it checks each redirect hop against the policy and
/// otherwise does what FoundationNetworking does for a task without a delegate.
///
/// Without a delegate, FoundationNetworking follows a redirect inside its protocol with no call out;
/// with one, it asks `willPerformHTTPRedirection` first. So while the load runs, this object is the
/// task's delegate (written where FoundationNetworking keeps it, see ``PlatformInternals``), and it
/// answers as no delegate would: a hop the policy allows is followed with the `Cookie` header the
/// caller's session gives its URL (what FoundationNetworking adds to a hop it follows itself); a hop
/// the policy refuses is not followed, and the load ends with the refusal (``SystemLoad`` turns the
/// redirect response into the refusal). Challenges get the default handling, as without a delegate;
/// the default implementations of the other task delegate methods do nothing.
final class RedirectCheck: NSObject, URLSessionTaskDelegate, @unchecked Sendable {
    // @unchecked: the verdict closure is immutable and thread-safe, the configuration only read; the
    // hops are in `state`, a Mutex.

    private struct State {
        var redirects: [URL] = []
        var refusal: RequestAuditError?
    }

    private let hopVerdict: @Sendable (URLRequest) -> RequestAuditError?
    /// The caller session's configuration (only read), for its cookies when a hop is followed.
    private let configuration: URLSessionConfiguration?
    private let state = Locked(State())

    /// A check of each hop with `hopVerdict`, adding the cookies of `configuration` (the caller
    /// session's) to the hops it follows.
    init(hopVerdict: @escaping @Sendable (URLRequest) -> RequestAuditError?, configuration: URLSessionConfiguration?) {
        self.hopVerdict = hopVerdict
        self.configuration = configuration
    }

    /// The hops followed so far, in order.
    var redirects: [URL] { state.withLock { $0.redirects } }

    /// The refusal of the hop the policy did not let the task follow, if there was one.
    var refusal: RequestAuditError? { state.withLock { $0.refusal } }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, willPerformHTTPRedirection response: HTTPURLResponse,
        newRequest request: URLRequest, completionHandler: @escaping @Sendable (URLRequest?) -> Void
    ) {
        if let refusal = hopVerdict(request) {
            state.withLock { $0.refusal = refusal }
            return completionHandler(nil)
        }
        if let url = request.url { state.withLock { $0.redirects.append(url) } }
        completionHandler(CookieJar(configuration)?.addingCookies(to: request) ?? request)
    }
}

extension CookieJar {
    /// `request` with a `Cookie` header for its URL when the storage has cookies for it and the
    /// session sends cookies; unchanged otherwise (as FoundationNetworking prepares a hop it
    /// follows without a delegate).
    func addingCookies(to request: URLRequest) -> URLRequest {
        guard sendsCookies, let url = request.url, let cookies = storage.cookies(for: url),
            let header = HTTPCookie.requestHeaderFields(with: cookies)["Cookie"], !header.isEmpty
        else { return request }
        var request = request
        request.setValue(header, forHTTPHeaderField: "Cookie")
        return request
    }
}
