import AuditLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The forwarding session's protocol for http and https: Foundation's own HTTP protocol, which it
/// holds and passes every call to, except a stop that comes once the load has ended.
///
/// A caller's suspension reaches its forwarded task later than it reached the caller's (decided on
/// the caller session's work queue, carried out from another queue), so it can land just as the
/// forwarded transfer completes: FoundationNetworking then runs the suspension's stop once the task
/// is `.completed`, and its protocol stops the process for a stop on a task neither suspended nor
/// failed (platform notes). A caller suspending a task at once after resuming it never meets that
/// directly (its transfer has not started), so the forwarding session must not meet it either.
final class ForwardedHTTPProtocol: URLProtocol {
    private enum Load {
        case idle
        /// Foundation's protocol loads the task (started, or paused by a suspension).
        case loading(URLProtocol)
        /// It finished or failed: nothing is left to stop.
        case ended
    }

    private let load = Locked(Load.idle)

    /// Takes what Foundation's own HTTP protocol takes.
    override class func canInit(with request: URLRequest) -> Bool {
        PlatformInternals.httpProtocolClass?.canInit(with: request) ?? false
    }

    /// Returns `request` unchanged, as Foundation's own protocol does.
    override class func canonicalRequest(for request: URLRequest) -> URLRequest { request }

    /// Starts Foundation's protocol for the task, or resumes it after a suspension.
    override func startLoading() {
        enum Start { case run(URLProtocol), ended, unavailable }
        let this = WeakReference(value: self)
        let start = load.withLock { load -> Start in
            switch load {
            case .loading(let loader): return .run(loader)
            case .ended: return .ended
            case .idle:
                guard let task, let client,
                    let loader = SystemLoad.makeLoader(
                        for: task, client: client, audit: nil, checkingHops: nil,
                        onEnd: { this.value?.load.withLock { $0 = .ended } })
                else { return .unavailable }
                load = .loading(loader)
                return .run(loader)
            }
        }
        switch start {
        case .run(let loader): loader.startLoading()
        case .ended: return
        case .unavailable: client?.urlProtocol(self, didFailWithError: URLError(.unsupportedURL))
        }
    }

    /// Passes the stop on while the load runs or is paused; once it ended there is nothing to stop.
    override func stopLoading() {
        guard case .loading(let loader) = load.withLock({ $0 }) else { return }
        loader.stopLoading()
    }

    /// The protocol, for the end-of-load closure its loader holds. `@unchecked`: URLProtocol is not
    /// Sendable; the only mutable field used through it is `load`, in a Mutex.
    private struct WeakReference: @unchecked Sendable {
        weak var value: ForwardedHTTPProtocol?
    }
}
