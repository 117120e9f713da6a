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
/// (outcome `systemLoader`). Their redirect hops are followed by Foundation and not checked against
/// the policy.
final class SystemLoad: NSObject, URLProtocolClient, @unchecked Sendable {
    // @unchecked: `caller` is FoundationNetworking's own client, called from the queue Foundation's
    // protocol calls this one on; nothing here is mutable.

    private let caller: URLProtocolClient
    /// The request this load carries out (nil when not audited: RequestAudit was uninstalled). The
    /// first message that ends the load finishes it; later ones are ignored, as for every request.
    private let audit: AuditedRequest?
    /// Told when Foundation's protocol ends the load (finished or failed), before the caller is.
    private let onEnd: @Sendable () -> Void

    private init(caller: URLProtocolClient, audit: AuditedRequest?, onEnd: @escaping @Sendable () -> Void) {
        self.caller = caller
        self.audit = audit
        self.onEnd = onEnd
    }

    /// Foundation's HTTP protocol, made to load `task` and to report to `client` through a
    /// `SystemLoad`, which calls `onEnd` when the load ends; nil when the platform has none.
    static func makeLoader(
        for task: URLSessionTask, client: URLProtocolClient, audit: AuditedRequest?,
        onEnd: @escaping @Sendable () -> Void
    ) -> URLProtocol? {
        guard let protocolClass = PlatformInternals.httpProtocolClass else { return nil }
        let client = SystemLoad(caller: client, audit: audit, onEnd: onEnd)
        return protocolClass.init(task: task, cachedResponse: nil, client: client)
    }

    /// The caller stopped the load of `task` (cancelled it): Foundation tells the caller itself.
    func stopped(_ task: URLSessionTask?) {
        record(kind: .cancelled, task: nil, error: URLError(.cancelled))
    }

    private func record(kind: OutcomeSnapshot.Kind, task: URLSessionTask?, error: Error?) {
        guard let audit else { return }
        let response = task?.response as? HTTPURLResponse
        audit.finish(
            Outcome(
                kind, status: response?.statusCode,
                bytes: kind == .systemLoader ? task.map { Int($0.countOfBytesReceived) } : nil,
                destination: task?.originalRequest?.url.map { .url($0.absoluteString) } ?? .none,
                finalURL: response?.url?.absoluteString, failure: error.map(Outcome.Failure.init)))
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
        caller.urlProtocol(`protocol`, didReceive: response, cacheStoragePolicy: policy)
    }

    func urlProtocol(_ protocol: URLProtocol, didLoad data: Data) {
        caller.urlProtocol(`protocol`, didLoad: data)
    }

    func urlProtocolDidFinishLoading(_ protocol: URLProtocol) {
        record(kind: .systemLoader, task: `protocol`.task, error: nil)
        onEnd()
        caller.urlProtocolDidFinishLoading(`protocol`)
    }

    func urlProtocol(_ protocol: URLProtocol, didFailWithError error: Error) {
        record(kind: .failure, task: `protocol`.task, error: error)
        onEnd()
        caller.urlProtocol(`protocol`, didFailWithError: error)
    }

    func urlProtocol(_ protocol: URLProtocol, didReceive challenge: URLAuthenticationChallenge) {
        caller.urlProtocol(`protocol`, didReceive: challenge)
    }

    func urlProtocol(_ protocol: URLProtocol, didCancel challenge: URLAuthenticationChallenge) {
        caller.urlProtocol(`protocol`, didCancel: challenge)
    }
}
