import AuditLocking
import AuditPolicy
import AuditReport
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Foundation's own HTTP protocol loading a caller's task from inside ``RequestInfoProtocol``, after
/// the decision, with this client between it and the caller's: every message goes on unchanged, and
/// the first that ends the load writes the record.
///
/// Download tasks and upload tasks are loaded this way: they keep their file or body in the task,
/// where no protocol of ours can reach it, and FoundationNetworking completes a download only for a
/// protocol that wrote the file itself. So for them the platform's protocol does the transfer,
/// exactly as without RequestAudit (progress, resume data, challenges, redirects and the caller's
/// delegate included), and RequestAudit decides, refuses or lets it go, and records what came back
/// (outcome `systemLoader`).
///
/// Foundation's protocol follows redirects by itself and shows only the response they lead to. So
/// the URL of that response is decided as a redirect hop is, before anything of it reaches the
/// caller: refused, the caller gets the refusal instead of the response, its body or the file, and
/// the load is recorded as `blocked` with that URL. The hop itself has then been sent (no public API
/// lets a protocol stop Foundation's in between), and hops before the last are not seen.
final class SystemLoad: NSObject, URLProtocolClient, @unchecked Sendable {
    // @unchecked: `caller` is FoundationNetworking's own client, called from the queue Foundation's
    // protocol calls this one on; the one mutable field, `hop`, is behind its lock.

    private let caller: URLProtocolClient
    /// The request this load carries out (nil when not audited: RequestAudit was uninstalled). The
    /// first message that ends the load finishes it; later ones are ignored, as for every request.
    private let audit: AuditedRequest?
    /// Told when Foundation's protocol ends the load (finished or failed), before the caller is.
    private let onEnd: @Sendable () -> Void
    /// Decides the URL a redirect led to (nil when not audited).
    private let hopVerdict: (@Sendable (URLRequest) -> RequestAuditError?)?
    /// What was decided of the URL the response came from, once it came.
    private let hop = Locked<Hop>(.undecided)

    private enum Hop {
        case undecided
        case allowed
        case refused(RequestAuditError, url: String)
    }

    private init(
        caller: URLProtocolClient, audit: AuditedRequest?, onEnd: @escaping @Sendable () -> Void,
        hopVerdict: (@Sendable (URLRequest) -> RequestAuditError?)?
    ) {
        self.caller = caller
        self.audit = audit
        self.onEnd = onEnd
        self.hopVerdict = hopVerdict
    }

    /// Foundation's HTTP protocol, made to load `task` and to report to `client` through a
    /// `SystemLoad`, which calls `onEnd` when the load ends and decides the URL a redirect led to
    /// with `hopVerdict`; nil when the platform has none.
    static func makeLoader(
        for task: URLSessionTask, client: URLProtocolClient, audit: AuditedRequest?,
        checkingHops hopVerdict: (@Sendable (URLRequest) -> RequestAuditError?)?,
        onEnd: @escaping @Sendable () -> Void
    ) -> URLProtocol? {
        guard let protocolClass = PlatformInternals.httpProtocolClass else { return nil }
        let client = SystemLoad(caller: client, audit: audit, onEnd: onEnd, hopVerdict: hopVerdict)
        return protocolClass.init(task: task, cachedResponse: nil, client: client)
    }

    /// The refusal of the URL `task`'s response came from (`response`, or the task's), when a
    /// redirect led there and the policy refuses it; decided once, with the request Foundation sent there.
    private func refusal(of task: URLSessionTask?, response: URLResponse? = nil) -> RequestAuditError? {
        guard let hopVerdict else { return nil }
        return hop.withLock { hop -> RequestAuditError? in
            switch hop {
            case .allowed: return nil
            case .refused(let refusal, _): return refusal
            case .undecided: break
            }
            guard let url = (response ?? task?.response)?.url, let original = task?.originalRequest?.url,
                url != original
            else {
                hop = .allowed
                return nil
            }
            let sent = task?.currentRequest.flatMap { $0.url == url ? $0 : nil } ?? URLRequest(url: url)
            guard let refusal = hopVerdict(sent) else {
                hop = .allowed
                return nil
            }
            hop = .refused(refusal, url: url.absoluteString)
            return refusal
        }
    }

    /// Whether the load's response came from a URL the policy refused.
    private var isRefused: Bool {
        hop.withLock { if case .refused = $0 { true } else { false } }
    }

    /// The caller stopped the load of `task` (cancelled it): Foundation tells the caller itself.
    func stopped(_ task: URLSessionTask?) {
        record(kind: .cancelled, task: nil, error: URLError(.cancelled))
    }

    /// Records the load's end as `kind` with `error`; as `blocked` when its response came from a
    /// URL the policy refused.
    private func record(kind: OutcomeSnapshot.Kind, task: URLSessionTask?, error: Error?) {
        guard let audit else { return }
        var outcome = Outcome(
            kind, destination: task?.originalRequest?.url.map { .url($0.absoluteString) } ?? .none,
            failure: error.map(Outcome.Failure.init))
        if case .refused(let refusal, let url) = hop.withLock({ $0 }) {
            outcome.kind = .blocked
            outcome.finalURL = url
            outcome.failure = Outcome.Failure(refusal.urlError)
        } else {
            let response = task?.response as? HTTPURLResponse
            outcome.status = response?.statusCode
            outcome.finalURL = response?.url?.absoluteString
            if kind == .systemLoader { outcome.bytes = task.map { Int($0.countOfBytesReceived) } }
        }
        audit.finish(outcome)
    }

    // MARK: URLProtocolClient: each message goes on unchanged

    func urlProtocol(_ protocol: URLProtocol, wasRedirectedTo request: URLRequest, redirectResponse: URLResponse) {
        caller.urlProtocol(`protocol`, wasRedirectedTo: request, redirectResponse: redirectResponse)
    }

    func urlProtocol(_ protocol: URLProtocol, cachedResponseIsValid cachedResponse: CachedURLResponse) {
        caller.urlProtocol(`protocol`, cachedResponseIsValid: cachedResponse)
    }

    func urlProtocol(
        _ protocol: URLProtocol, didReceive response: URLResponse, cacheStoragePolicy policy: URLCache.StoragePolicy
    ) {
        guard refusal(of: `protocol`.task, response: response) == nil else { return }
        caller.urlProtocol(`protocol`, didReceive: response, cacheStoragePolicy: policy)
    }

    func urlProtocol(_ protocol: URLProtocol, didLoad data: Data) {
        guard !isRefused else { return }
        caller.urlProtocol(`protocol`, didLoad: data)
    }

    func urlProtocolDidFinishLoading(_ protocol: URLProtocol) {
        let refusal = refusal(of: `protocol`.task)
        record(kind: .systemLoader, task: `protocol`.task, error: nil)
        onEnd()
        if let refusal { return caller.urlProtocol(`protocol`, didFailWithError: refusal.urlError) }
        caller.urlProtocolDidFinishLoading(`protocol`)
    }

    func urlProtocol(_ protocol: URLProtocol, didFailWithError error: Error) {
        let refusal = refusal(of: `protocol`.task)
        record(kind: .failure, task: `protocol`.task, error: error)
        onEnd()
        caller.urlProtocol(`protocol`, didFailWithError: refusal?.urlError ?? error)
    }

    func urlProtocol(_ protocol: URLProtocol, didReceive challenge: URLAuthenticationChallenge) {
        caller.urlProtocol(`protocol`, didReceive: challenge)
    }

    func urlProtocol(_ protocol: URLProtocol, didCancel challenge: URLAuthenticationChallenge) {
        caller.urlProtocol(`protocol`, didCancel: challenge)
    }
}
