import AuditReport
import Foundation
import RequestAudit
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The session delegate of the soak: answers every challenge, follows every redirect, and tells the
/// waiting caller when a delegate-only task completes.
private final class SoakDelegate: NSObject, URLSessionDataDelegate, Sendable {
    private let waiting = Mutex<[Int: CheckedContinuation<Int, Never>]>([:])
    private let received = Mutex<[Int: Int]>([:])

    func wait(for task: URLSessionTask) async -> Int {
        await withCheckedContinuation { continuation in
            waiting.withLock { $0[task.taskIdentifier] = continuation }
            task.resume()
        }
    }

    func urlSession(
        _ session: URLSession, task: URLSessionTask, didReceive challenge: URLAuthenticationChallenge,
        completionHandler: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        completionHandler(.useCredential, URLCredential(user: "soak", password: "pw", persistence: .none))
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        received.withLock { $0[dataTask.taskIdentifier, default: 0] += data.count }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        let bytes = received.withLock { $0.removeValue(forKey: task.taskIdentifier) } ?? 0
        waiting.withLock { $0.removeValue(forKey: task.taskIdentifier) }?.resume(returning: bytes)
    }
}

extension InterceptionTests {
    @Suite struct Soak {
        /// The shapes the soak mixes, one request each, in turn.
        enum Shape: CaseIterable {
            case data, download, uploadFromData, uploadFromFile, bodyStream, streamToDelegate, cancelMidway
            case redirect, challenge, blocked
        }

        @Test("10,000 mixed requests 16 at a time: none hangs, each has exactly one record, none is left in flight")
        func tenThousandMixedRequests() async throws {
            let audited = try AuditedSession(
                rules: "[block] field=path\nsoak-block ^/anything/soak-blocked\n[record]\nall .")
            let configuration = URLSessionConfiguration.ephemeral
            try audited.auditor.install(into: configuration)
            let delegate = SoakDelegate()
            let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
            defer { session.finishTasksAndInvalidate() }
            let file = FileManager.default.temporaryDirectory.appendingPathComponent("soak-\(UUID().uuidString)")
            try Data(repeating: 42, count: 2_048).write(to: file)
            let total = 10_000
            let soak = SoakRun(session: session, delegate: delegate, file: file, base: HTTPBin.base)
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<16 {
                    group.addTask {
                        while let index = soak.nextIndex(below: total) { await soak.run(index) }
                    }
                }
            }
            let outcomes = soak.outcomes
            // A cancelled load's record is written when its forwarded task has stopped, just after the caller hears.
            for _ in 0..<250 where audited.auditor.inFlightCount > 0 { try await Task.sleep(for: .milliseconds(20)) }
            #expect(audited.auditor.inFlightCount == 0)
            let records = try await audited.finish()
            #expect(outcomes == ["ok": total])
            #expect(records.count == total)
            #expect(Set(records.map(\.id)).count == total)
            #expect(audited.auditor.statistics.requests == total)
        }
    }
}

/// The soak's shared state: the session, what it sends, the next request's index and the outcomes.
private final class SoakRun: Sendable {
    let session: URLSession
    let delegate: SoakDelegate
    let file: URL
    let base: String
    private let next = Atomic<Int>(0)
    private let results = Mutex<[String: Int]>([:])

    init(session: URLSession, delegate: SoakDelegate, file: URL, base: String) {
        self.session = session
        self.delegate = delegate
        self.file = file
        self.base = base
    }

    /// The next request's index, or nil once `total` were handed out.
    func nextIndex(below total: Int) -> Int? {
        let index = next.wrappingAdd(1, ordering: .relaxed).oldValue
        return index < total ? index : nil
    }

    /// How many requests ended how ("ok" or what went wrong).
    var outcomes: [String: Int] { results.withLock { $0 } }

    func run(_ index: Int) async {
        let shapes = InterceptionTests.Soak.Shape.allCases
        let shape = shapes[index % shapes.count]
        let result: String
        switch shape {
        case .data:
            result = await complete(session, URLRequest(url: HTTPBin.url(base + "/get?soak=\(index)")))
        case .download:
            result = await withCheckedContinuation { continuation in
                session.downloadTask(with: HTTPBin.url(base + "/bytes/2048?seed=\(index)")) { url, _, error in
                    let size = url.flatMap { try? Data(contentsOf: $0).count }
                    if let url { try? FileManager.default.removeItem(at: url) }
                    continuation.resume(returning: error == nil && size == 2_048 ? "ok" : "download failed")
                }.resume()
            }
        case .uploadFromData, .uploadFromFile:
            var request = URLRequest(url: HTTPBin.url(base + "/post?soak=\(index)"))
            request.httpMethod = "POST"
            result = await withCheckedContinuation { continuation in
                let handler: @Sendable (Data?, URLResponse?, Error?) -> Void = { _, response, error in
                    let status = (response as? HTTPURLResponse)?.statusCode
                    continuation.resume(returning: error == nil && status == 200 ? "ok" : "upload failed")
                }
                if shape == InterceptionTests.Soak.Shape.uploadFromData {
                    session.uploadTask(
                        with: request, from: Data(repeating: 1, count: 1_024), completionHandler: handler
                    )
                    .resume()
                } else {
                    session.uploadTask(with: request, fromFile: file, completionHandler: handler).resume()
                }
            }
        case .bodyStream:
            var request = URLRequest(url: HTTPBin.url(base + "/post?soak=\(index)"))
            request.httpMethod = "POST"
            request.httpBodyStream = InputStream(data: Data(repeating: 2, count: 1_024))
            result = await complete(session, request)
        case .streamToDelegate:
            let bytes = await delegate.wait(
                for: session.dataTask(with: HTTPBin.url(base + "/stream-bytes/3000?seed=1")))
            result = bytes == 3_000 ? "ok" : "stream got \(bytes) bytes"
        case .cancelMidway:
            result = await withCheckedContinuation { continuation in
                let task = session.dataTask(with: HTTPBin.url(base + "/drip?duration=1&numbytes=4&delay=0")) {
                    _, _, error in
                    continuation.resume(
                        returning: (error as? URLError)?.code == .cancelled ? "ok" : "not cancelled")
                }
                task.resume()
                DispatchQueue.global().asyncAfter(deadline: .now() + 0.02) { task.cancel() }
            }
        case .redirect:
            result = await complete(session, URLRequest(url: HTTPBin.url(base + "/redirect/1")))
        case .challenge:
            result = await complete(session, URLRequest(url: HTTPBin.url(base + "/basic-auth/soak/pw")))
        case .blocked:
            let outcome = await complete(session, URLRequest(url: HTTPBin.url(base + "/anything/soak-blocked")))
            result = outcome == "failed -1008" ? "ok" : outcome
        }
        results.withLock { $0[result, default: 0] += 1 }
    }
}

/// Runs a completion-handler data task: "ok" for a 2xx, else what went wrong.
private func complete(_ session: URLSession, _ request: URLRequest) async -> String {
    await withCheckedContinuation { continuation in
        session.dataTask(with: request) { _, response, error in
            if let error { return continuation.resume(returning: "failed \((error as NSError).code)") }
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            continuation.resume(returning: (200..<300).contains(status) ? "ok" : "status \(status)")
        }.resume()
    }
}
