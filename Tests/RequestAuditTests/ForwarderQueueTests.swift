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
        @Test("platform fact: the forwarding session's completions run on its own work queue")
        func completionsRunOnWorkQueue() async throws {
            let forwarder = Forwarder(hopVerdict: { _ in nil })
            defer { forwarder.invalidate() }
            let workQueue = try #require(forwarder.workQueue)
            let key = DispatchSpecificKey<String>()
            workQueue.setSpecific(key: key, value: "forwarder")
            let seen = await withCheckedContinuation { (continuation: CheckedContinuation<String?, Never>) in
                _ = forwarder.start(URLRequest(url: HTTPBin.url(.get(query: "queue=1"))), cookies: nil) { _ in
                    continuation.resume(returning: DispatchQueue.getSpecific(key: key))
                }
            }
            #expect(seen == "forwarder")
        }

        @Test("platform fact: while a forwarding completion runs, no other session's work queue runs")
        func workQueuesShareOneSerialQueue() async throws {
            let forwarder = Forwarder(hopVerdict: { _ in nil })
            defer { forwarder.invalidate() }
            let other = URLSession(configuration: .ephemeral)
            let caller = CallerSession.details(of: other.dataTask(with: HTTPBin.url(.get(query: "caller=1"))))
            let callerQueue = try #require(caller.workQueue)
            let order = Mutex<[String]>([])
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                _ = forwarder.start(URLRequest(url: HTTPBin.url(.get(query: "queue=2"))), cookies: nil) { _ in
                    // The caller session's work queue gets work while this completion still runs.
                    callerQueue.async {
                        order.withLock { $0.append("caller") }
                        continuation.resume()
                    }
                    Thread.sleep(forTimeInterval: 0.2)
                    order.withLock { $0.append("completion") }
                }
            }
            #expect(order.withLock { $0 } == ["completion", "caller"])
        }
    }
}
