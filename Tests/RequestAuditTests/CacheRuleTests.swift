import AuditPolicy
import AuditReport
import Foundation
import RequestAudit
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The lines of nginx's access log (`Tests/with-httpbin.sh`) that contain `marker`.
private func nginxLines(_ marker: String) throws -> [String] {
    let path = try #require(ProcessInfo.processInfo.environment["NGINX_ACCESS_LOG"], "NGINX_ACCESS_LOG is not set")
    return try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "\n").filter {
        $0.contains(marker)
    }
}

private var nginx: String {
    get throws {
        try #require(ProcessInfo.processInfo.environment["NGINX_URL"], "NGINX_URL is not set: run `make test`")
    }
}

/// What a cached response and a server's share: status, URL, body and its type and length.
private func essentials(_ exchange: Exchange, droppingQuery query: String) -> Exchange {
    var essential = exchange
    essential.url = exchange.url?.replacingOccurrences(of: "?" + query, with: "")
    essential.headers = exchange.headers.filter { $0.key == "content-type" || $0.key == "content-length" }
    return essential
}

extension InterceptionTests {
    @Suite struct CacheRules {
        static let rules = "[cache]\nall ^https?://\n"

        static func session() throws -> AuditedSession {
            let folder = NSTemporaryDirectory() + "app-cache-" + UUID().uuidString
            return try AuditedSession(rules: rules) { $0.cacheDirectory = folder }
        }

        @Test(
            "a fresh stored response reaches every caller style as nginx's did, and nginx sees one request",
            arguments: CallerStyle.allCases)
        func freshHit(_ style: CallerStyle) async throws {
            let audited = try Self.session()
            let direct = await style.run(
                URLRequest(url: HTTPBin.url(try nginx + "/fresh/page.html")), on: audited.direct)
            let marker = "app-fresh-\(UUID().uuidString)"
            let request = URLRequest(url: HTTPBin.url(try nginx + "/fresh/page.html?\(marker)"))
            let first = await style.run(request, on: audited.session)
            let second = await style.run(request, on: audited.session)
            let records = try await audited.finish()
            #expect(essentials(first, droppingQuery: marker) == essentials(direct, droppingQuery: marker))
            #expect(essentials(second, droppingQuery: marker) == essentials(direct, droppingQuery: marker))
            #expect(second.headers["age"] != nil)
            #expect(second.headers["cache-control"] == "max-age=60")
            #expect(try nginxLines(marker).count == 1)
            #expect(records.map(\.outcome.kind) == [.stored, .cached])
            #expect(records.map(\.outcome.bytes) == [219, 219])
            #expect(records.map(\.decision.cacheRule) == ["test/all", "test/all"])
        }

        @Test(
            "a byte range of a stored response, fresh or revalidated by nginx's 304, reaches every caller style as nginx's 206 does",
            arguments: CallerStyle.allCases, [false, true])
        func byteRange(_ style: CallerStyle, isRevalidated: Bool) async throws {
            let audited = try Self.session()
            let marker = "app-range-\(UUID().uuidString)"
            let path = isRevalidated ? "/no-cache/page.html" : "/fresh/page.html"
            let url = HTTPBin.url(try nginx + path + "?\(marker)")
            var ranged = URLRequest(url: url)
            ranged.setValue("bytes=5-24", forHTTPHeaderField: "Range")
            let direct = await style.run(ranged, on: audited.direct)
            _ = await style.run(URLRequest(url: url), on: audited.session)
            let part = await style.run(ranged, on: audited.session)
            let records = try await audited.finish()
            #expect(direct.status == 206)
            #expect(part.status == 206)
            #expect(part.body == direct.body)
            #expect(part.body?.count == 20)
            #expect(part.headers["content-range"] == direct.headers["content-range"])
            // Direct, the stored request, then the revalidation, if any.
            let lines = try nginxLines(marker)
            #expect(lines.count == (isRevalidated ? 3 : 2))
            if isRevalidated { #expect(lines.last?.contains("\" 304 ") == true) }
            #expect(records.map(\.outcome.kind) == [.stored, isRevalidated ? .revalidated : .cached])
            #expect(records.map(\.outcome.bytes) == [219, 20])
        }

        @Test(
            "a response to revalidate each time: nginx answers 304, every caller style gets the whole stored body",
            arguments: CallerStyle.allCases)
        func revalidated(_ style: CallerStyle) async throws {
            let audited = try Self.session()
            let marker = "app-revalidate-\(UUID().uuidString)"
            let request = URLRequest(url: HTTPBin.url(try nginx + "/no-cache/page.html?\(marker)"))
            let first = await style.run(request, on: audited.session)
            let second = await style.run(request, on: audited.session)
            let records = try await audited.finish()
            #expect(second.status == 200)
            #expect(second.body == first.body)
            #expect(second.body?.count == 219)
            #expect(try nginxLines(marker).last?.contains("\" 304 ") == true)
            #expect(records.map(\.outcome.kind) == [.stored, .revalidated])
            #expect(records.last?.outcome.bytes == 219)
        }

        @Test(
            "only-if-cached: nothing stored answers 504 in every caller style without asking nginx; once stored, the stored response",
            arguments: CallerStyle.allCases)
        func onlyIfCached(_ style: CallerStyle) async throws {
            let audited = try Self.session()
            let marker = "app-only-\(UUID().uuidString)"
            let url = HTTPBin.url(try nginx + "/fresh/page.html?\(marker)")
            var onlyCached = URLRequest(url: url)
            onlyCached.setValue("only-if-cached", forHTTPHeaderField: "Cache-Control")
            let miss = await style.run(onlyCached, on: audited.session)
            let stored = await style.run(URLRequest(url: url), on: audited.session)
            let hit = await style.run(onlyCached, on: audited.session)
            let records = try await audited.finish()
            #expect(miss.status == 504)
            #expect(miss.body.map { String(decoding: $0, as: UTF8.self) }?.contains(#""error":"not-cached""#) == true)
            #expect(hit.body == stored.body)
            #expect(hit.body?.count == 219)
            #expect(try nginxLines(marker).count == 1)
            #expect(records.map(\.outcome.kind) == [.failure, .stored, .cached])
        }

        @Test("a response with no-store is relayed every time and never kept")
        func noStore() async throws {
            let audited = try Self.session()
            let request = URLRequest(url: HTTPBin.url(.responseHeaders(["Cache-Control": "no-store"])))
            _ = await CallerStyle.async.run(request, on: audited.session)
            _ = await CallerStyle.async.run(request, on: audited.session)
            let records = try await audited.finish()
            #expect(records.map(\.outcome.kind) == [.response, .response])
        }

        @Test(
            "a POST answered without an error drops the stored response of its URL, a PUT answered 405 keeps it; neither has a cache rule",
            arguments: [("POST", 200), ("PUT", 405)])
        func changingMethods(_ method: String, status: Int) async throws {
            let audited = try Self.session()
            let marker = "app-change-\(UUID().uuidString)"
            // httpbin answers GET and POST here, and 405 to the other methods.
            let url = HTTPBin.url(HTTPBin.base + "/response-headers?Cache-Control=max-age%3D60&m=\(marker)")
            var changing = URLRequest(url: url)
            changing.httpMethod = method
            _ = await CallerStyle.async.run(URLRequest(url: url), on: audited.session)
            _ = await CallerStyle.async.run(URLRequest(url: url), on: audited.session)
            let changed = await CallerStyle.async.run(changing, on: audited.session)
            _ = await CallerStyle.async.run(URLRequest(url: url), on: audited.session)
            let records = try await audited.finish()
            #expect(changed.status == status)
            #expect(records.map(\.outcome.kind) == [.stored, .cached, .response, status < 400 ? .stored : .cached])
            #expect(records.map(\.decision.cacheRule) == ["test/all", "test/all", nil, "test/all"])
        }

        @Test("a cache folder that cannot be used is a clear error when the auditor is made")
        func unusableFolder() throws {
            let file = NSTemporaryDirectory() + "not-a-folder-" + UUID().uuidString
            _ = FileManager.default.createFile(atPath: file, contents: Data())
            var configuration = AuditorConfiguration()
            configuration.cacheDirectory = file
            #expect {
                try Auditor(policy: Policy(parsing: Self.rules, file: "c.rules"), configuration: configuration)
            } throws: { error in
                (error as? RequestAuditError)?.description.hasPrefix("cache folder '\(file)' cannot be used") == true
            }
        }
    }
}

extension InterceptionTests.CallerSessionSettings {
    @Test("URLSession.shared, audited by install() with a cache folder: the second request is served from the cache")
    func sharedSessionCache() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("shared-cache-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var configuration = AuditorConfiguration()
        configuration.logPath = folder.path + "/audit.jsonl"
        configuration.cacheDirectory = folder.path + "/cache"
        let auditor = try Auditor(
            policy: Policy(parsing: "[cache]\nall ^https?://\n", file: "shared.rules"), configuration: configuration)
        try auditor.install()
        let marker = "shared-cache-\(UUID().uuidString)"
        let url = HTTPBin.url(try nginx + "/fresh/small.txt?\(marker)")
        let (first, _) = try await URLSession.shared.data(from: url)
        let (second, response) = try await URLSession.shared.data(from: url)
        try await auditor.shutdown()
        let records = try AuditLogReader.read(atPath: folder.path + "/audit.jsonl").records
        #expect(first == Data(repeating: UInt8(ascii: "x"), count: 1_024))
        #expect(second == first)
        #expect((response as? HTTPURLResponse)?.value(forHTTPHeaderField: "Age") != nil)
        #expect(try nginxLines(marker).count == 1)
        #expect(records.map(\.outcome.kind) == [.stored, .cached])
    }
}

extension InterceptionTests.CacheRules {
    /// The port of Python's `http.server` from its first line ("Serving HTTP on 127.0.0.1 port N …").
    static func listeningPort(_ output: FileHandle) -> Int? {
        var line = Data()
        while let byte = try? output.read(upToCount: 1), let first = byte.first, first != UInt8(ascii: "\n") {
            line.append(first)
        }
        let words = String(decoding: line, as: UTF8.self).split(separator: " ")
        return words.firstIndex(of: "port").flatMap { $0 + 1 < words.count ? Int(words[$0 + 1]) : nil }
    }

    @Test(
        "with the server gone, an offline rule serves the stale response to every caller style, recorded as stale",
        arguments: CallerStyle.allCases)
    func offline(_ style: CallerStyle) async throws {
        let folder = NSTemporaryDirectory() + "offline-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try "kept for offline use".write(toFile: folder + "/doc.txt", atomically: true, encoding: .utf8)
        // Port 0: the server picks a free port and names it on its first line, once it listens.
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        server.arguments = ["python3", "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", folder]
        let output = Pipe()
        server.standardOutput = output
        server.standardError = FileHandle.nullDevice
        try server.run()
        // SIGKILL: a child of Foundation's Process may start with SIGTERM blocked (docs/platform-notes.md).
        defer { if server.isRunning { kill(server.processIdentifier, SIGKILL) } }
        let port = try #require(Self.listeningPort(output.fileHandleForReading), "the test server did not start")
        let audited = try AuditedSession(rules: "[cache] ttl=1s offline\ndocs ^http://127\\.0\\.0\\.1:\(port)/\n") {
            $0.cacheDirectory = folder + "/cache"
        }
        let request = URLRequest(url: HTTPBin.url("http://127.0.0.1:\(port)/doc.txt"))
        let first = await style.run(request, on: audited.session)
        kill(server.processIdentifier, SIGKILL)
        server.waitUntilExit()
        try await Task.sleep(for: .milliseconds(1_100))
        let offline = await style.run(request, on: audited.session)
        let records = try await audited.finish()
        #expect(first.status == 200)
        #expect(offline.status == 200)
        #expect(offline.body == Data("kept for offline use".utf8))
        #expect(records.map(\.outcome.kind) == [.stored, .stale])
    }
}

extension InterceptionTests.CacheRules {
    /// A URL of the raw server's path that answers by how often it was asked (`/counted/KEY`,
    /// `/then-fails/KEY`), with a fresh key and `control` as the answers' Cache-Control.
    static func countedURL(_ path: String, control: String) -> URL {
        let query = control.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? control
        return HTTPBin.url(InterceptionTests.RawResponses.base() + "/\(path)/\(UUID().uuidString)?cc=\(query)")
    }

    @Test(
        "a server's 500 within stale-if-error is answered with the stored response in every caller style, recorded as stale",
        arguments: CallerStyle.allCases)
    func staleIfError(_ style: CallerStyle) async throws {
        let audited = try Self.session()
        let request = URLRequest(url: Self.countedURL("then-fails", control: "max-age=1, stale-if-error=600"))
        let first = await style.run(request, on: audited.session)
        try await Task.sleep(for: .milliseconds(1_100))
        let second = await style.run(request, on: audited.session)
        let direct = await style.run(request, on: audited.direct)
        let records = try await audited.finish()
        #expect(first.status == 200)
        #expect(second.status == 200)
        #expect(second.body == Data("first answer".utf8))
        #expect(second.headers["age"] != nil)
        #expect(direct.status == 500)  // what the server said, kept from the caller
        #expect(records.map(\.outcome.kind) == [.stored, .stale])
        #expect(records.map(\.outcome.status) == [200, 200])
        #expect(records.last?.outcome.bytes == 12)
    }

    @Test(
        "without stale-if-error, a server's 500 after the stored response went stale reaches the caller",
        arguments: CallerStyle.allCases)
    func errorPassedOn(_ style: CallerStyle) async throws {
        let audited = try Self.session()
        let request = URLRequest(url: Self.countedURL("then-fails", control: "max-age=1"))
        _ = await style.run(request, on: audited.session)
        try await Task.sleep(for: .milliseconds(1_100))
        let second = await style.run(request, on: audited.session)
        let records = try await audited.finish()
        #expect(second.status == 500)
        #expect(second.body == Data("server error".utf8))
        #expect(records.map(\.outcome.kind) == [.stored, .response])
    }

    @Test(
        "within stale-while-revalidate the stale response answers at once and is revalidated in the background",
        arguments: CallerStyle.allCases)
    func staleWhileRevalidate(_ style: CallerStyle) async throws {
        let audited = try Self.session()
        let request = URLRequest(url: Self.countedURL("counted", control: "max-age=1, stale-while-revalidate=600"))
        let first = await style.run(request, on: audited.session)
        try await Task.sleep(for: .milliseconds(1_100))
        let stale = await style.run(request, on: audited.session)
        // The background request's answer replaces the stored one: later requests get it.
        var later = await style.run(request, on: audited.session)
        let deadline = ContinuousClock.now + .seconds(20)
        while later.body != Data("answer 2".utf8), ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            later = await style.run(request, on: audited.session)
        }
        let records = try await audited.finish()
        #expect(first.body == Data("answer 1".utf8))
        #expect(stale.status == 200)
        #expect(stale.body == Data("answer 1".utf8))
        #expect(later.body == Data("answer 2".utf8))
        #expect(records.prefix(2).map(\.outcome.kind) == [.stored, .stale])
        #expect(records.dropFirst(2).allSatisfy { [.stale, .cached].contains($0.outcome.kind) })
    }
}
