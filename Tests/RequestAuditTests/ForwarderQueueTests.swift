import Foundation
import Synchronization
import Testing

@testable import RequestAudit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension InterceptionTests {
    /// The platform facts that let a forwarded result reach the caller's client without a thread hop.
    @Suite struct ForwarderQueue {
        @Test("platform fact: the forwarding session's delegate calls run on its own work queue")
        func completionsRunOnWorkQueue() async throws {
            let forwarder = Forwarder()
            defer { forwarder.invalidate() }
            let workQueue = try #require(forwarder.workQueue)
            let key = DispatchSpecificKey<String>()
            workQueue.setSpecific(key: key, value: "forwarder")
            let seen = await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
                forwarder.task(
                    for:
                        URLRequest(url: HTTPBin.url(.get(query: "queue=1"))),
                    observer: CompletionObserver { _ in
                        continuation.resume(returning: DispatchQueue.getSpecific(key: key))
                    }
                ).resume()
            }
            #expect(seen == "forwarder")
        }

        @Test("platform fact: while a forwarding completion runs, no other session's work queue runs")
        func workQueuesShareOneSerialQueue() async throws {
            let forwarder = Forwarder()
            defer { forwarder.invalidate() }
            let other = URLSession(configuration: .ephemeral)
            let caller = CallerSession.details(of: other.dataTask(with: HTTPBin.url(.get(query: "caller=1"))))
            let callerQueue = try #require(caller.workQueue)
            let order = Mutex<[String]>([])
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                forwarder.task(
                    for:
                        URLRequest(url: HTTPBin.url(.get(query: "queue=2"))),
                    observer: CompletionObserver { _ in
                        // The caller session's work queue gets work while this completion still runs.
                        callerQueue.async {
                            order.withLock { $0.append("caller") }
                            continuation.resume()
                        }
                        Thread.sleep(forTimeInterval: 0.2)
                        order.withLock { $0.append("completion") }
                    }
                ).resume()
            }
            #expect(order.withLock { $0 } == ["completion", "caller"])
        }
    }
}

/// A forwarded-load observer that only waits for the end.
final class CompletionObserver: ForwardedLoadObserver, Sendable {
    private let onCompletion: @Sendable (Error?) -> Void

    init(_ onCompletion: @escaping @Sendable (Error?) -> Void) { self.onCompletion = onCompletion }

    func forwarded(response: URLResponse) {}
    func forwarded(data: Data) {}
    func forwarded(
        redirect response: HTTPURLResponse, proposed request: URLRequest,
        answer: @escaping @Sendable (URLRequest?) -> Void
    ) { answer(request) }
    func forwarded(
        challenge: URLAuthenticationChallenge,
        answer: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) { answer(.performDefaultHandling, nil) }
    func forwarded(sentBodyBytes bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {}
    func forwardedNeedsNewBodyStream(answer: @escaping @Sendable (InputStream?) -> Void) { answer(nil) }
    func forwardedCompletion(error: Error?) { onCompletion(error) }
}
