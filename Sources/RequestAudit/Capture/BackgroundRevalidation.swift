import AuditCache
import AuditLocking
import AuditReport
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request sent in the background on a caller session's forwarding session, for a response the
/// cache served stale (`stale-while-revalidate`): its answer goes to the cache's fill (a 304
/// refreshes the stored response, another answer replaces it) and to no caller. It stops at a
/// redirect (the redirect is the answer) and at a challenge (nothing is stored).
///
/// It is not recorded: the request it revalidates was, as `stale`.
final class BackgroundRevalidation: ForwardedLoadObserver {
    private let fill: CacheFill
    private let writer = Locked<CacheEntryWriter?>(nil)

    private init(fill: CacheFill) {
        self.fill = fill
    }

    /// Sends `request` on `forwarder`'s session and hands its answer to `fill`.
    ///
    /// Called off the session's work queue (the task is made and resumed right here).
    static func start(_ request: URLRequest, fill: CacheFill, on forwarder: Forwarder) {
        forwarder.task(for: request, observer: BackgroundRevalidation(fill: fill)).resume()
    }

    func forwarded(response: URLResponse) {
        guard let http = response as? HTTPURLResponse else { return }
        let answered = fill.answeredInBackground(status: http.statusCode, headers: http.headerList)
        writer.withLock { $0 = answered }
    }

    func forwarded(data: Data) {
        writer.withLock { $0 }?.append(data)
    }

    func forwarded(
        redirect response: HTTPURLResponse, proposed request: URLRequest,
        answer: @escaping @Sendable (URLRequest?) -> Void
    ) {
        answer(nil)
    }

    func forwarded(
        challenge: URLAuthenticationChallenge,
        answer: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        answer(.cancelAuthenticationChallenge, nil)
    }

    func forwarded(sentBodyBytes bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {}

    func forwardedNeedsNewBodyStream(answer: @escaping @Sendable (InputStream?) -> Void) {
        answer(nil)
    }

    func forwardedCompletion(error: Error?) {
        let last = writer.withLock { writer in
            defer { writer = nil }
            return writer
        }
        if error == nil { last?.commit() } else { last?.abandon() }
        fill.finishWithoutStoring()
    }
}
