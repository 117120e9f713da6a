import AuditCache
import AuditPipeline
import AuditPolicy
import AuditProxy
import AuditReport
import Foundation
import Testing

/// `cache` rules in `audit proxy`, against nginx and httpbin: what is stored, what is served
/// without the server, and how each request is recorded.
@Suite(.serialized) struct ProxyCacheTests {
    /// A proxy with a cache in `cacheFolder` (a fresh folder unless given).
    static func proxy(rules: String, cacheFolder: String? = nil) async throws -> (RunningProxy, HTTPCache) {
        let folder = cacheFolder ?? NSTemporaryDirectory() + "proxy-cache-" + UUID().uuidString
        let cache = try HTTPCache(directory: folder, maximumBytes: 64 << 20, isShared: true)
        let proxy = try await RunningProxy(rules: rules) { $0.cache = cache }
        return (proxy, cache)
    }

    /// How often `marker` appears in httpbin's access log.
    static func httpbinRequests(_ marker: String) throws -> Int {
        try String(contentsOfFile: Servers.variable("HTTPBIN_ACCESS_LOG"), encoding: .utf8)
            .components(separatedBy: "\n").count { $0.contains(marker) }
    }

    /// The lines of nginx's access log that contain `marker`.
    static func nginxLines(_ marker: String) throws -> [String] {
        try String(contentsOfFile: Servers.variable("NGINX_ACCESS_LOG"), encoding: .utf8)
            .components(separatedBy: "\n").filter { $0.contains(marker) }
    }

    static let everything = "[cache]\nall ^https?://\n"

    /// What nginx's `path` (with a fresh marker) gives: straight, then twice through a caching proxy
    /// (the second with its head); the marker, the records, and the second response split.
    static func directThenTwice(_ path: String) async throws -> (
        marker: String, direct: String, first: String, head: String, body: String, records: [AuditRecord]
    ) {
        let (proxy, _) = try await Self.proxy(rules: Self.everything)
        let marker = "twice-\(UUID().uuidString)"
        let url = try Servers.nginx + path + "?\(marker)"
        let direct = try runClient("curl", ["-sS", url])
        let first = try runClient("curl", ["-sS", "-x", proxy.address, url])
        let second = try runClient("curl", ["-sS", "-i", "-x", proxy.address, url])
        let records = try await proxy.finish()
        let (head, body) = try #require(split(second.output))
        return (marker, direct.output, first.output, head, body, records)
    }

    @Test("a response with max-age is stored, then served byte for byte without the server, with Age and the rule")
    func freshHit() async throws {
        let (marker, direct, first, head, body, records) = try await Self.directThenTwice("/fresh/page.html")
        #expect(first == direct)
        #expect(body == direct)
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(head.contains("Cache-Control: max-age=60\r\n"))
        #expect(head.contains("Age: 0\r\n") || head.contains("Age: 1\r\n"))
        #expect(head.contains("X-Request-Audit-Rule: p/all\r\n"))
        #expect(try Self.nginxLines(marker).count == 2)  // direct, then the proxy's one
        #expect(records.map(\.outcome.kind) == [.stored, .cached])
        #expect(records.map(\.decision.cacheRule) == ["p/all", "p/all"])
        #expect(records.map(\.outcome.bytes) == [direct.utf8.count, direct.utf8.count])
    }

    /// How a stored response reaches a later request: fresh (`/fresh/`, served at once), or to be
    /// revalidated every time (`/no-cache/`, nginx answers the proxy's condition with 304).
    enum StoredState: String, CaseIterable, CustomTestStringConvertible {
        case fresh, revalidated

        var path: String { self == .fresh ? "/fresh/page.html" : "/no-cache/page.html" }
        /// How the range request is recorded.
        var kind: OutcomeSnapshot.Kind { self == .fresh ? .cached : .revalidated }
        var testDescription: String { rawValue }
    }

    @Test(
        "a byte range of a stored response, fresh or revalidated by nginx's 304, is answered as nginx answers it: 206 with the part, 416 past the end",
        arguments: StoredState.allCases,
        [
            "bytes=0-9", "bytes=5-", "bytes=-7", "bytes=0-0", "bytes=3-100000", "bytes=-100000", "BYTES=1-2",
            "bytes= 1-2", "bytes=100000-", "bytes=-0",
        ])
    func byteRange(_ state: StoredState, _ range: String) async throws {
        let (proxy, _) = try await Self.proxy(rules: Self.everything)
        let marker = "range-\(UUID().uuidString)"
        let url = try Servers.nginx + state.path + "?\(marker)"
        _ = try runClient("curl", ["-sS", "-x", proxy.address, url])
        let direct = try runClient("curl", ["-sS", "-i", "-H", "Range: \(range)", url])
        let served = try runClient("curl", ["-sS", "-i", "-H", "Range: \(range)", "-x", proxy.address, url])
        let records = try await proxy.finish()
        let (directHead, directBody) = try #require(split(direct.output))
        let (head, body) = try #require(split(served.output))
        let statusLine = { (head: String) in head.prefix { $0 != "\r" }.split(separator: " ").prefix(2) }
        let contentRange = { (head: String) in
            head.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix("content-range:") }
        }
        #expect(statusLine(head) == statusLine(directHead))
        #expect(contentRange(head) == contentRange(directHead))
        if head.hasPrefix("HTTP/1.1 206") { #expect(body == directBody) }
        // The proxy's first request, direct, then the proxy's revalidation, if any.
        let lines = try Self.nginxLines(marker)
        #expect(lines.count == (state == .fresh ? 2 : 3))
        if state == .revalidated { #expect(lines.last?.contains("\" 304 ") == true) }
        #expect(records.map(\.outcome.kind) == [.stored, state.kind])
        #expect(records.last?.outcome.bytes == (head.hasPrefix("HTTP/1.1 206") ? body.utf8.count : 0))
    }

    @Test("curl -C - resumes a download from a stored response: the file is whole and the server is not asked")
    func resumedDownload() async throws {
        let (proxy, _) = try await Self.proxy(rules: Self.everything)
        let marker = "resume-\(UUID().uuidString)"
        let url = try Servers.nginx + "/fresh/page.html?\(marker)"
        let whole = try runClient("curl", ["-sS", "-x", proxy.address, url]).output
        let file = NSTemporaryDirectory() + marker
        try Data(whole.utf8.prefix(100)).write(to: URL(fileURLWithPath: file))
        let resumed = try runClient("curl", ["-sS", "-C", "-", "-o", file, "-x", proxy.address, url])
        let records = try await proxy.finish()
        #expect(resumed.status == 0)
        #expect(try String(contentsOfFile: file, encoding: .utf8) == whole)
        #expect(try Self.nginxLines(marker).count == 1)
        #expect(records.map(\.outcome.status) == [200, 206])
    }

    @Test("only-if-cached: nothing stored answers 504 without asking the server; once stored, the stored response")
    func onlyIfCached() async throws {
        let (proxy, _) = try await Self.proxy(rules: Self.everything)
        let marker = "only-\(UUID().uuidString)"
        let url = try Servers.nginx + "/fresh/page.html?\(marker)"
        let onlyCached = ["-H", "Cache-Control: only-if-cached"]
        let miss = try runClient("curl", ["-sS", "-w", "\n%{http_code}", "-x", proxy.address] + onlyCached + [url])
        let direct = try runClient("curl", ["-sS", "-x", proxy.address, url])
        let hit = try runClient("curl", ["-sS", "-x", proxy.address] + onlyCached + [url])
        let records = try await proxy.finish()
        #expect(miss.output.hasSuffix("\n504"))
        #expect(miss.output.hasPrefix(#"{"error":"not-cached","message":"the request asks only for a stored response"#))
        #expect(hit.output == direct.output)
        #expect(try Self.nginxLines(marker).count == 1)
        #expect(records.map(\.outcome.kind) == [.failure, .stored, .cached])
        #expect(records.first?.outcome.error?.code == 504)
    }

    @Test("a stored response marked no-cache is revalidated: nginx answers 304 and the client gets the whole body")
    func revalidation() async throws {
        let (marker, direct, first, head, body, records) = try await Self.directThenTwice("/no-cache/page.html")
        #expect(first == direct)
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(body == direct)
        let lines = try Self.nginxLines(marker)
        #expect(lines.count == 3)
        #expect(lines.last?.contains("\" 304 ") == true)
        #expect(records.map(\.outcome.kind) == [.stored, .revalidated])
        #expect(records.last?.outcome.bytes == direct.utf8.count)
    }

    @Test("a client's own If-None-Match that names the stored ETag gets 304 from the cache")
    func clientCondition() async throws {
        let (proxy, _) = try await Self.proxy(rules: Self.everything)
        let url = try Servers.nginx + "/fresh/page.html?cond-\(UUID().uuidString)"
        let first = try runClient("curl", ["-sS", "-i", "-x", proxy.address, url])
        let etag = try #require(
            first.output.components(separatedBy: "\r\n").first { $0.lowercased().hasPrefix("etag:") }?
                .dropFirst(5).trimmingCharacters(in: .whitespaces))
        let second = try runClient("curl", ["-sS", "-i", "-x", proxy.address, "-H", "If-None-Match: \(etag)", url])
        let records = try await proxy.finish()
        #expect(second.output.hasPrefix("HTTP/1.1 304 Not Modified\r\n"))
        #expect(records.map(\.outcome.kind) == [.stored, .cached])
        #expect(records.last?.outcome.status == 304)
    }

    @Test("Vary: a stored response answers only requests with the same value of the header it names; each is kept")
    func vary() async throws {
        let (proxy, _) = try await Self.proxy(rules: Self.everything)
        let marker = "vary-\(UUID().uuidString)"
        let url = try Servers.httpbin + "/response-headers?Cache-Control=max-age%3D60&Vary=Accept-Language&m=\(marker)"
        for language in ["en", "en", "fr", "fr", "en", "fr"] {
            let run = try runClient("curl", ["-sS", "-x", proxy.address, "-H", "Accept-Language: \(language)", url])
            #expect(run.status == 0)
        }
        let records = try await proxy.finish()
        #expect(records.map(\.outcome.kind) == [.stored, .cached, .stored, .cached, .cached, .cached])
        #expect(try Self.httpbinRequests(marker) == 2)
    }

    @Test("a request with Authorization is not stored unless the rule says private")
    func authorization() async throws {
        let marker = "auth-\(UUID().uuidString)"
        let rules = try """
        [cache] private
        own ^\(NSRegularExpression.escapedPattern(for: Servers.httpbin))/response-headers\\?.*&own=
        [cache]
        all ^https?://
        """
        let (proxy, _) = try await Self.proxy(rules: rules)
        let base = try Servers.httpbin + "/response-headers?Cache-Control=max-age%3D60&m=\(marker)"
        for url in [base, base, base + "&own=1", base + "&own=1"] {
            _ = try runClient("curl", ["-sS", "-x", proxy.address, "-H", "Authorization: Bearer secret", url])
        }
        let records = try await proxy.finish()
        #expect(records.map(\.outcome.kind) == [.response, .response, .stored, .cached])
        #expect(try Self.httpbinRequests(marker) == 3)
    }

    @Test("no-store and Set-Cookie responses are never stored")
    func neverStored() async throws {
        let (proxy, cache) = try await Self.proxy(rules: Self.everything)
        let marker = "nostore-\(UUID().uuidString)"
        for query in ["Cache-Control=no-store", "Cache-Control=max-age%3D60&Set-Cookie=a%3Db"] {
            for _ in 0..<2 {
                _ = try runClient(
                    "curl",
                    ["-sS", "-x", proxy.address, try Servers.httpbin + "/response-headers?\(query)&m=\(marker)"])
            }
        }
        let records = try await proxy.finish()
        #expect(records.map(\.outcome.kind) == [.response, .response, .response, .response])
        #expect(try Self.httpbinRequests(marker) == 4)
        #expect(cache.usage.entries == 0)
    }

    @Test("twenty concurrent misses for one URL make one request to the server; all twenty get its body")
    func concurrentMisses() async throws {
        let (proxy, _) = try await Self.proxy(rules: "[cache] ttl=60s\nslow ^https?://[^/]+/delay/\n")
        let marker = "herd-\(UUID().uuidString)"
        let url = try Servers.httpbin + "/delay/1?m=\(marker)"
        let runs = try await withThrowingTaskGroup(of: ClientRun.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    try runClient("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-x", proxy.address, url])
                }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        let records = try await proxy.finish()
        #expect(runs.map(\.output) == Array(repeating: "200", count: 20))
        #expect(try Self.httpbinRequests(marker) == 1)
        #expect(records.count { $0.outcome.kind == .stored } == 1)
        #expect(records.count { $0.outcome.kind == .cached } == 19)
    }

    @Test("a new proxy on the same cache folder serves what the last one stored")
    func restart() async throws {
        let folder = NSTemporaryDirectory() + "proxy-cache-" + UUID().uuidString
        let marker = "restart-\(UUID().uuidString)"
        let url = try Servers.nginx + "/fresh/small.txt?\(marker)"
        let (first, _) = try await Self.proxy(rules: Self.everything, cacheFolder: folder)
        _ = try runClient("curl", ["-sS", "-x", first.address, url])
        _ = try await first.finish()
        let (second, _) = try await Self.proxy(rules: Self.everything, cacheFolder: folder)
        let run = try runClient("curl", ["-sS", "-x", second.address, url])
        let records = try await second.finish()
        #expect(run.output == String(repeating: "x", count: 1_024))
        #expect(records.map(\.outcome.kind) == [.cached])
        #expect(try Self.nginxLines(marker).count == 1)
    }

    @Test("with the server gone, an offline rule serves the stale response and records it as stale")
    func offline() async throws {
        let server = try LocalFileServer(files: ["doc.txt": "kept for offline use"])
        let (proxy, _) = try await Self.proxy(
            rules: "[cache] ttl=1s offline\ndocs ^http://127\\.0\\.0\\.1:\(server.port)/\n")
        let url = "http://127.0.0.1:\(server.port)/doc.txt"
        let first = try runClient("curl", ["-sS", "-x", proxy.address, url])
        server.stop()
        try await Task.sleep(for: .milliseconds(1_100))
        let second = try runClient("curl", ["-sS", "-i", "-x", proxy.address, url])
        let records = try await proxy.finish()
        #expect(first.output == "kept for offline use")
        let (head, body) = try #require(split(second.output))
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(body == "kept for offline use")
        #expect(records.map(\.outcome.kind) == [.stored, .stale])
    }

    @Test("without offline, a stale response is not served when the server is gone: 502")
    func notOffline() async throws {
        let server = try LocalFileServer(files: ["doc.txt": "stale"])
        let (proxy, _) = try await Self.proxy(rules: "[cache] ttl=1s\ndocs ^http://127\\.0\\.0\\.1:\(server.port)/\n")
        let url = "http://127.0.0.1:\(server.port)/doc.txt"
        _ = try runClient("curl", ["-sS", "-x", proxy.address, url])
        server.stop()
        try await Task.sleep(for: .milliseconds(1_100))
        let second = try runClient("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-x", proxy.address, url])
        let records = try await proxy.finish()
        #expect(second.output == "502")
        #expect(records.map(\.outcome.kind) == [.stored, .failure])
    }

    /// A URL of the raw server's path that answers by how often it was asked (`/counted/KEY`,
    /// `/then-fails/KEY`, `Tests/Servers/raw_responses.py`), with a fresh key and `control` as the
    /// answers' Cache-Control.
    static func countedURL(_ path: String, control: String) throws -> String {
        let query = control.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? control
        return try Servers.variable("RAW_URL") + "/\(path)/\(UUID().uuidString)?cc=\(query)"
    }

    @Test("a server's 500 within stale-if-error is answered with the stored response, recorded as stale")
    func staleIfError() async throws {
        let (proxy, _) = try await Self.proxy(rules: Self.everything)
        let url = try Self.countedURL("then-fails", control: "max-age=1, stale-if-error=600")
        let first = try runClient("curl", ["-sS", "-x", proxy.address, url])
        try await Task.sleep(for: .milliseconds(1_100))
        let second = try runClient("curl", ["-sS", "-i", "-x", proxy.address, url])
        let direct = try runClient("curl", ["-sS", "-o", "/dev/null", "-w", "%{http_code}", url])
        let records = try await proxy.finish()
        #expect(first.output == "first answer")
        let (head, body) = try #require(split(second.output))
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(head.contains("Age: "))
        #expect(body == "first answer")
        #expect(direct.output == "500")  // what the server said, kept from the client
        #expect(records.map(\.outcome.kind) == [.stored, .stale])
        #expect(records.map(\.outcome.status) == [200, 200])
        #expect(records.last?.outcome.bytes == 12)
    }

    @Test("without stale-if-error, a server's 500 after the stored response went stale reaches the client")
    func errorPassedOn() async throws {
        let (proxy, _) = try await Self.proxy(rules: Self.everything)
        let url = try Self.countedURL("then-fails", control: "max-age=1")
        _ = try runClient("curl", ["-sS", "-x", proxy.address, url])
        try await Task.sleep(for: .milliseconds(1_100))
        let second = try runClient("curl", ["-sS", "-i", "-x", proxy.address, url])
        let records = try await proxy.finish()
        let (head, body) = try #require(split(second.output))
        #expect(head.hasPrefix("HTTP/1.1 500 "))
        #expect(body == "server error")
        #expect(records.map(\.outcome.kind) == [.stored, .response])
    }

    @Test("within stale-while-revalidate the stale response answers at once and is revalidated in the background")
    func staleWhileRevalidate() async throws {
        let (proxy, _) = try await Self.proxy(rules: Self.everything)
        let url = try Self.countedURL("counted", control: "max-age=1, stale-while-revalidate=600")
        let first = try runClient("curl", ["-sS", "-x", proxy.address, url])
        try await Task.sleep(for: .milliseconds(1_100))
        let stale = try runClient("curl", ["-sS", "-i", "-x", proxy.address, url])
        // The background request's answer replaces the stored one: later requests get it.
        var later = try runClient("curl", ["-sS", "-x", proxy.address, url])
        let deadline = ContinuousClock.now + .seconds(20)
        while later.output != "answer 2", ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            later = try runClient("curl", ["-sS", "-x", proxy.address, url])
        }
        let records = try await proxy.finish()
        #expect(first.output == "answer 1")
        let (head, body) = try #require(split(stale.output))
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(head.contains("Cache-Control: max-age=1, stale-while-revalidate=600\r\n"))
        #expect(body == "answer 1")
        #expect(later.output == "answer 2")
        #expect(records.prefix(2).map(\.outcome.kind) == [.stored, .stale])
        #expect(records.dropFirst(2).allSatisfy { [.stale, .cached].contains($0.outcome.kind) })
    }

    @Test("HEAD is answered from a stored GET; POST goes to the server and drops the stored response")
    func otherMethods() async throws {
        let (proxy, cache) = try await Self.proxy(rules: Self.everything)
        let marker = "methods-\(UUID().uuidString)"
        let url = try Servers.httpbin + "/response-headers?Cache-Control=max-age%3D60&m=\(marker)"
        _ = try runClient("curl", ["-sS", "-x", proxy.address, url])
        let head = try runClient("curl", ["-sS", "-I", "-x", proxy.address, url])
        _ = try runClient("curl", ["-sS", "-x", proxy.address, "-X", "POST", url])
        let records = try await proxy.finish()
        #expect(head.output.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(records.map(\.outcome.kind) == [.stored, .cached, .response])
        #expect(records.map(\.decision.cacheRule) == ["p/all", "p/all", nil])
        #expect(try Self.httpbinRequests(marker) == 2)
        #expect(cache.usage.entries == 0)
    }
}

/// A small HTTP server (Python's) serving files from a temporary folder on a free port, which a
/// test can stop.
final class LocalFileServer: Sendable {
    let port: Int
    private let process: Process

    init(files: [String: String]) throws {
        let folder = NSTemporaryDirectory() + "files-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        for (name, text) in files { try text.write(toFile: folder + "/" + name, atomically: true, encoding: .utf8) }
        port = try freeLoopbackPort()
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", "-m", "http.server", "--bind", "127.0.0.1", "--directory", folder, String(port),
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<100 {
            if (try? runClient("curl", ["-sS", "-o", "/dev/null", "http://127.0.0.1:\(port)/"]))?.status == 0 {
                return
            }
            Thread.sleep(forTimeInterval: 0.05)
        }
    }

    /// Kills the server (SIGKILL: a child of Foundation's `Process` starts with signals such as
    /// SIGTERM blocked, see docs/platform-notes.md).
    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    deinit { if process.isRunning { stop() } }
}
