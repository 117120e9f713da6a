import AuditLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// POSTs OTLP/HTTP JSON bodies to one endpoint and waits for the answer, on the caller's thread
/// (each exporter's own queue, never the Swift concurrency pool).
///
/// It has a session of its own: RequestAudit's protocol, registered for `URLSession.shared`, never
/// sees the exporter's requests.
struct OTLPHTTPSender: Sendable {
    let endpoint: URL
    let headers: [String: String]
    private let session: URLSession

    init(endpoint: URL, headers: [String: String]) {
        self.endpoint = endpoint
        self.headers = headers
        let configuration = URLSessionConfiguration.ephemeral
        configuration.timeoutIntervalForRequest = 10
        session = URLSession(configuration: configuration)
    }

    /// POSTs `body`; true when the collector took it (2xx).
    func post(_ body: Data) -> Bool {
        var request = URLRequest(url: endpoint)
        request.httpMethod = "POST"
        request.httpBody = body
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        // No "Expect: 100-continue" round trip before the body (libcurl's default for large bodies).
        request.setValue("", forHTTPHeaderField: "Expect")
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let done = DispatchSemaphore(value: 0)
        let result = Locked(false)
        session.dataTask(with: request) { _, response, error in
            let status = (response as? HTTPURLResponse)?.statusCode ?? 0
            result.withLock { $0 = error == nil && (200..<300).contains(status) }
            done.signal()
        }.resume()
        done.wait()
        return result.withLock { $0 }
    }

    /// Lets the session go once its requests end.
    func close() {
        session.finishTasksAndInvalidate()
    }
}
