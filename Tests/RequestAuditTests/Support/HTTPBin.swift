import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The real httpbin started by `Tests/with-httpbin.sh` (`make test`).
enum HTTPBin {
    /// Base URL, from `HTTPBIN_URL`.
    static var base: String {
        guard let base = ProcessInfo.processInfo.environment["HTTPBIN_URL"] else {
            Issue.record(
                "HTTPBIN_URL is not set: run the tests with `make test` (Tests/with-httpbin.sh starts httpbin)")
            return "http://127.0.0.1:9"
        }
        return base
    }

    /// The URL of `endpoint`.
    static func url(_ endpoint: Endpoint) -> URL {
        url(base + endpoint.path)
    }

    /// `text` as a URL; an unparsable text is a test failure.
    static func url(_ text: String) -> URL {
        guard let url = URL(string: text) else {
            Issue.record("not a URL: \(text)")
            return URL(fileURLWithPath: "/")
        }
        return url
    }

    /// Request lines the server has logged so far, e.g. `GET /get?a=1 HTTP/1.1`.
    static func requestLines() -> [String] {
        guard let path = ProcessInfo.processInfo.environment["HTTPBIN_ACCESS_LOG"],
            let text = try? String(contentsOfFile: path, encoding: .utf8)
        else { return [] }
        return text.split(separator: "\n").compactMap { line in
            guard let open = line.firstIndex(of: "\""),
                let close = line[line.index(after: open)...].firstIndex(of: "\"")
            else {
                return nil
            }
            return String(line[line.index(after: open)..<close])
        }
    }

    /// Whether the server received a request whose path starts with `path`, waiting until a sentinel
    /// request sent afterwards shows up in the log (so "absent" really means "never arrived").
    static func received(pathPrefix path: String) async throws -> Bool {
        let sentinel = "/anything/sentinel-\(UUID().uuidString)"
        _ = try await URLSession(configuration: .ephemeral).data(from: url(base + sentinel))
        for _ in 0..<100 {
            let lines = requestLines()
            if lines.contains(where: { $0.contains(sentinel) }) {
                return lines.contains { $0.split(separator: " ").dropFirst().first?.hasPrefix(path) == true }
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        Issue.record("the sentinel request never reached the access log")
        return true
    }
}

/// httpbin endpoints the tests use.
enum Endpoint: Sendable, CustomTestStringConvertible {
    case get(query: String)
    case anything(String)
    case post
    case put
    case patch
    case delete
    case headers
    case gzip
    case deflate
    case streamBytes(Int)
    case bytes(Int)
    case status(Int)
    case redirect(count: Int)
    case absoluteRedirect(count: Int)
    case delay(seconds: Int)
    /// `/drip`: `bytes` bytes spread over `seconds`, starting after `delay` seconds.
    case drip(seconds: Int, bytes: Int, delay: Int = 0)
    /// `/response-headers`: a response carrying each header given (with a marker to find it by).
    case responseHeaders([String: String])

    var path: String {
        switch self {
        case .get(let query): "/get?\(query)"
        case .anything(let rest): "/anything/\(rest)"
        case .post: "/post"
        case .put: "/put"
        case .patch: "/patch"
        case .delete: "/delete"
        case .headers: "/headers"
        case .gzip: "/gzip"
        case .deflate: "/deflate"
        case .streamBytes(let count): "/stream-bytes/\(count)?chunk_size=4096&seed=7"
        case .bytes(let count): "/bytes/\(count)?seed=3"
        case .status(let code): "/status/\(code)"
        case .redirect(let count): "/redirect/\(count)"
        case .absoluteRedirect(let count): "/absolute-redirect/\(count)"
        case .delay(let seconds): "/delay/\(seconds)"
        case .drip(let seconds, let bytes, let delay): "/drip?duration=\(seconds)&numbytes=\(bytes)&delay=\(delay)"
        case .responseHeaders(let headers):
            "/response-headers?"
                + headers.sorted { $0.key < $1.key }.map { name, value in
                    name + "=" + (value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? value)
                }.joined(separator: "&")
        }
    }

    var testDescription: String { path }
}
