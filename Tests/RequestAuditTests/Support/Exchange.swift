import Foundation
import Synchronization
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What a caller saw of one request: the thing that must be identical with and without RequestAudit.
struct Exchange: Equatable, CustomStringConvertible {
    var status: Int?
    var url: String?
    /// Response headers except `Date`, names lower-cased.
    var headers: [String: String]
    var body: Data?
    var errorDomain: String?
    var errorCode: Int?

    init(data: Data?, response: URLResponse?, error: Error?) {
        let http = response as? HTTPURLResponse
        status = http?.statusCode
        url = response?.url?.absoluteString
        var headers: [String: String] = [:]
        for (key, value) in http?.allHeaderFields ?? [:] {
            guard let name = (key as? String)?.lowercased(), name != "date", let value = value as? String else {
                continue
            }
            headers[name] = value
        }
        self.headers = headers
        body = error == nil ? (data ?? Data()) : nil
        errorDomain = error.map { ($0 as NSError).domain }
        errorCode = error.map { ($0 as NSError).code }
    }

    var description: String {
        "status=\(status.map(String.init) ?? "-") url=\(url ?? "-") bytes=\(body?.count ?? -1) error=\(errorDomain ?? "-")/\(errorCode ?? 0)"
    }
}

/// The three ways a caller can use URLSession.
enum CallerStyle: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case completionHandler
    case delegate
    case async

    var testDescription: String { rawValue }

    /// Runs `request` on `session` in this style; `cancelAfter` cancels the task mid-transfer.
    func run(_ request: URLRequest, on session: URLSession, cancelAfter: Duration? = nil) async -> Exchange {
        switch self {
        case .completionHandler:
            return await withCheckedContinuation { continuation in
                let task = session.dataTask(with: request) { data, response, error in
                    continuation.resume(returning: Exchange(data: data, response: response, error: error))
                }
                task.resume()
                if let cancelAfter { Self.cancel(task, after: cancelAfter) }
            }
        case .delegate:
            let collector = DelegateCollector()
            let delegateSession = URLSession(
                configuration: session.configuration, delegate: collector, delegateQueue: nil)
            defer { delegateSession.finishTasksAndInvalidate() }
            return await withCheckedContinuation { continuation in
                collector.onComplete = { continuation.resume(returning: $0) }
                let task = delegateSession.dataTask(with: request)
                task.resume()
                if let cancelAfter { Self.cancel(task, after: cancelAfter) }
            }
        case .async:
            let task = Task {
                do {
                    let (data, response) = try await session.data(for: request)
                    return Exchange(data: data, response: response, error: nil)
                } catch {
                    return Exchange(data: nil, response: nil, error: error)
                }
            }
            if let cancelAfter {
                try? await Task.sleep(for: cancelAfter)
                task.cancel()
            }
            return await task.value
        }
    }

    private static func cancel(_ task: URLSessionTask, after delay: Duration) {
        let box = TaskBox(task)
        Task {
            try? await Task.sleep(for: delay)
            box.task.cancel()
        }
    }

    private struct TaskBox: @unchecked Sendable {
        let task: URLSessionTask
        init(_ task: URLSessionTask) { self.task = task }
    }
}

/// Collects a delegate-based data task's response, chunks and completion.
final class DelegateCollector: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // Mutated only on the session's serial delegate queue.
    var onComplete: ((Exchange) -> Void)?
    private var response: URLResponse?
    private var data = Data()

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        self.response = response
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        self.data.append(data)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        onComplete?(Exchange(data: data, response: response ?? task.response, error: error))
        onComplete = nil
    }
}
