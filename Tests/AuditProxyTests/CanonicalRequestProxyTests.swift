import AuditPolicy
import AuditReport
import Foundation
import Testing

/// Spellings and framings of blocked requests sent through `audit proxy` to a real httpbin: nothing
/// blocked reaches the server, and the log has one record per request the server received.
@Suite struct CanonicalRequestProxyTests {
    static let rules = """
        [block] field=path message="No admin pages"
        admin ^/anything/admin(/|$)
        [block] field=query message="No debugging"
        debug (^|&)debug=1(&|$)
        [block] methods=DELETE message="No deletes"
        delete ^http://127\\.0\\.0\\.1(:[0-9]+)?/anything/
        [block] message="No raw loopback downloads"
        loopback ^http://127\\.0\\.0\\.1(:[0-9]+)?/anything/payload\\.exe
        """

    /// `METHOD URL` pairs, each a spelling of a blocked request; `PORT` is httpbin's port.
    static let blockedSpellings: [(String, String)] = [
        ("GET", "http://127.0.0.1:PORT/anything/admin"),
        ("GET", "http://127.0.0.1:PORT/anything/%61dmin"),
        ("GET", "http://127.0.0.1:PORT/anything/adm%69n"),
        ("GET", "http://127.0.0.1:PORT/anything//admin"),
        ("GET", "http://127.0.0.1:PORT/anything/./admin"),
        ("GET", "http://127.0.0.1:PORT/anything/x/../admin"),
        ("GET", "http://127.0.0.1:PORT/anything/%2e/admin"),
        ("GET", "http://127.0.0.1:PORT/anything/x/%2e%2e/admin"),
        ("GET", "http://127.0.0.1:PORT/anything/x/%2E%2E/admin"),
        ("GET", "http://127.0.0.1:PORT/anything/q?debug=%31"),
        ("GET", "http://127.0.0.1:PORT/anything/q?de%62ug=1"),
        ("GET", "http://127.0.0.1:PORT/anything/q?a=2&%64ebug=1"),
        ("DELETE", "http://127.0.0.1:PORT/anything/delete"),
        ("DELETE", "http://127.0.0.1.:PORT/anything/delete"),
        ("GET", "http://2130706433:PORT/anything/payload.exe"),
        ("GET", "http://0x7f.0.0.1:PORT/anything/payload.exe"),
        ("GET", "http://0177.0.0.1:PORT/anything/payload.exe"),
        ("GET", "http://127.1:PORT/anything/payload.exe"),
        ("GET", "http://0x7F000001:PORT/anything/payload.exe"),
        ("GET", "http://[::ffff:127.0.0.1]:PORT/anything/payload.exe"),
        ("GET", "http://%31%32%37.0.0.1:PORT/anything/payload.exe"),
        ("GET", "http://127.0.0.1:0PORT/anything/payload%2Eexe"),
        ("GET", "HTTP://127.0.0.1:PORT/anything/payload.exe#frag"),
    ]

    /// The URL with httpbin's port in it and a marker the access log can be searched for.
    static func spelled(_ url: String, port: Int, marker: String) -> String {
        let withPort = url.replacingOccurrences(of: "PORT", with: String(port))
        let parts = withPort.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
        let base = String(parts[0])
        let fragment = parts.count > 1 ? "#" + parts[1] : ""
        return base + (base.contains("?") ? "&" : "?") + "m=" + marker + fragment
    }

    static func httpbinPort() throws -> Int {
        let url = try Servers.httpbin
        return try #require(Int(url.split(separator: ":").last ?? ""))
    }

    /// Sends `method url` through the proxy with a Host naming the URL's authority; returns the answer.
    static func send(_ method: String, _ url: String, to proxy: RunningProxy) throws -> String {
        let connection = try RawConnection(port: proxy.server.port ?? 0)
        let authority = hostHeader(of: url)
        connection.send("\(method) \(url) HTTP/1.1\r\nHost: \(authority)\r\nConnection: close\r\n\r\n")
        return connection.readToEnd()
    }

    @Test("every spelling of a blocked request is refused, none reaches httpbin, one record each")
    func blockedSpellingsNeverReachTheServer() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let port = try Self.httpbinPort()
        var markers: [String] = []
        for (method, url) in Self.blockedSpellings {
            let marker = "spell-\(UUID().uuidString)"
            markers.append(marker)
            let answer = try Self.send(method, Self.spelled(url, port: port, marker: marker), to: proxy)
            #expect(answer.hasPrefix("HTTP/1.1 403 Forbidden\r\n"), "\(method) \(url): \(answer.prefix(200))")
        }
        let records = try await proxy.finish()
        #expect(records.count == Self.blockedSpellings.count)
        #expect(records.allSatisfy { $0.outcome.kind == .blocked })
        let accessLog = try String(contentsOfFile: Servers.variable("HTTPBIN_ACCESS_LOG"), encoding: .utf8)
        for marker in markers { #expect(!accessLog.contains(marker), "\(marker) reached httpbin") }
    }

    @Test("an allowed request is sent in the form it was decided in, and recorded with the URL as received")
    func allowedRequestGoesCanonical() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let port = try Self.httpbinPort()
        let marker = "canon-\(UUID().uuidString)"
        let url = "http://0x7f.0.0.1:\(port)/anything/x/../%7Euser//page?%41=%31&m=\(marker)#top"
        let answer = try Self.send("GET", url, to: proxy)
        let records = try await proxy.finish()
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"))
        let echoed = try jsonObject(answer)
        #expect(echoed["url"] as? String == "http://127.0.0.1:\(port)/anything/~user/page?A=1&m=\(marker)")
        #expect((echoed["headers"] as? [String: String])?["Host"] == "127.0.0.1:\(port)")
        #expect(records.count == 1)
        #expect(records.first?.request.url == "http://127.0.0.1:\(port)/anything/~user/page?A=1&m=\(marker)")
        #expect(records.first?.request.receivedURL == url)
        #expect(records.first?.outcome.kind == .response)
    }

    @Test("two Host headers, or a Host naming another server than the URI, are refused with 400 JSON")
    func hostContradictions() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let url = try Servers.httpbin + "/anything/host-\(UUID().uuidString)"
        let authority = hostHeader(of: url)
        let framings = [
            "GET \(url) HTTP/1.1\r\nHost: forbidden.test\r\n\r\n",
            "GET \(url) HTTP/1.1\r\nHost: \(authority)\r\nHost: forbidden.test\r\n\r\n",
            "GET \(url) HTTP/1.1\r\nHost: \(authority)\r\nHost: \(authority)\r\n\r\n",
        ]
        for framing in framings {
            let connection = try RawConnection(port: proxy.server.port ?? 0)
            connection.send(framing)
            let answer = connection.readToEnd()
            #expect(answer.hasPrefix("HTTP/1.1 400 Bad Request\r\n"), "\(answer)")
            #expect(try jsonObject(answer)["error"] as? String == "bad-request")
        }
        let records = try await proxy.finish()
        #expect(records.isEmpty)
        let accessLog = try String(contentsOfFile: Servers.variable("HTTPBIN_ACCESS_LOG"), encoding: .utf8)
        #expect(!accessLog.contains(url.split(separator: "/").last.map(String.init) ?? "-"))
    }

    @Test("a Host spelled otherwise but naming the same server is accepted and replaced by the decided one")
    func equivalentHostAccepted() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let port = try Self.httpbinPort()
        let connection = try RawConnection(port: proxy.server.port ?? 0)
        connection.send(
            "GET http://127.0.0.1:\(port)/headers HTTP/1.1\r\nHost: 0x7F.1:\(port)\r\nConnection: close\r\n\r\n")
        let answer = connection.readToEnd()
        _ = try await proxy.finish()
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(((try jsonObject(answer))["headers"] as? [String: String])?["Host"] == "127.0.0.1:\(port)")
    }

    @Test("an invalid URL is refused with 403 naming why, recorded, and not sent")
    func invalidURLRefused() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let connection = try RawConnection(port: proxy.server.port ?? 0)
        connection.send("GET http://127.0.0.1:99999/anything HTTP/1.1\r\nHost: 127.0.0.1:99999\r\n\r\n")
        let answer = connection.readToEnd()
        let records = try await proxy.finish()
        #expect(answer.hasPrefix("HTTP/1.1 403 Forbidden\r\n"))
        let body = try jsonObject(answer)
        #expect(body["error"] as? String == "invalid-url")
        #expect(body["message"] as? String == "invalid URL: port '99999' is not a number from 0 to 65535")
        #expect(records.map(\.decision.verdict) == [.block])
        #expect(records.first?.decision.errors == ["invalid URL: port '99999' is not a number from 0 to 65535"])
    }

    @Test("CONNECT opens tunnels to port 443 only by default; another port is refused and recorded")
    func connectPortAllowList() async throws {
        let proxy = try await RunningProxy(rules: Self.rules) { $0.connectPorts = [443] }
        let port = try Self.httpbinPort()
        let connection = try RawConnection(port: proxy.server.port ?? 0)
        connection.send("CONNECT 127.0.0.1:\(port) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n")
        let answer = connection.readToEnd()
        let records = try await proxy.finish()
        #expect(answer.hasPrefix("HTTP/1.1 403 Forbidden\r\n"))
        #expect(try jsonObject(answer)["error"] as? String == "connect-port")
        #expect(records.map(\.outcome.kind) == [.blocked])
        #expect(records.first?.request.url == "https://127.0.0.1:\(port)/")
    }

    @Test("Upgrade: h2c is not made: the request is decided and answered in HTTP/1.1")
    func h2cUpgradeNotMade() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let url = try Servers.httpbin + "/headers"
        let connection = try RawConnection(port: proxy.server.port ?? 0)
        connection.send(
            "GET \(url) HTTP/1.1\r\nHost: \(hostHeader(of: url))\r\nConnection: Upgrade, HTTP2-Settings, close\r\n"
                + "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n")
        let answer = connection.readToEnd()
        let records = try await proxy.finish()
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"))
        let headers = try #require((try jsonObject(answer))["headers"] as? [String: String])
        #expect(headers["Upgrade"] == nil)
        #expect(headers["Http2-Settings"] == nil)
        #expect(records.map(\.outcome.status) == [200])
    }

    /// Sends the requests `text(base, authority)` spells (httpbin's base URL and Host) on one
    /// connection to a proxy deciding by ``rules``: the answer, the status of each response in it,
    /// and the records.
    static func pipelined(_ text: (String, String) -> String) async throws
        -> (answer: String, statuses: [Substring], records: [AuditRecord], base: String)
    {
        let proxy = try await RunningProxy(rules: Self.rules)
        let base = try Servers.httpbin
        let connection = try RawConnection(port: proxy.server.port ?? 0)
        connection.send(text(base, hostHeader(of: base)))
        let answer = connection.readToEnd()
        let records = try await proxy.finish()
        let statuses = answer.components(separatedBy: "HTTP/1.1 ").dropFirst().map { $0.prefix(3) }
        return (answer, statuses, records, base)
    }

    @Test("pipelined requests on one connection are each answered in order, decided and logged once")
    func pipelinedRequests() async throws {
        let (answer, statuses, records, base) = try await Self.pipelined { base, authority in
            "GET \(base)/anything/one HTTP/1.1\r\nHost: \(authority)\r\n\r\n"
                + "GET \(base)/anything/admin HTTP/1.1\r\nHost: \(authority)\r\n\r\n"
                + "POST \(base)/anything/three HTTP/1.1\r\nHost: \(authority)\r\nContent-Length: 5\r\n\r\nhello"
                + "GET \(base)/anything/four HTTP/1.1\r\nHost: \(authority)\r\nConnection: close\r\n\r\n"
        }
        #expect(statuses == ["200", "403", "200", "200"], "\(answer)")
        #expect(records.map(\.request.url) == ["one", "admin", "three", "four"].map { "\(base)/anything/\($0)" })
    }

    @Test("requests pipelined after a chunked body, a refused body and a refused upgrade are answered in order")
    func pipelinedAfterBodiesAndRefusals() async throws {
        let (answer, statuses, records, base) = try await Self.pipelined { base, authority in
            "POST \(base)/anything/chunked HTTP/1.1\r\nHost: \(authority)\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "5\r\nhello\r\n0\r\n\r\n"
                + "POST \(base)/anything/admin HTTP/1.1\r\nHost: \(authority)\r\nContent-Length: 3\r\n\r\nabc"
                + "GET \(base)/anything/admin HTTP/1.1\r\nHost: \(authority)\r\nConnection: Upgrade\r\n"
                + "Upgrade: websocket\r\n\r\n"
                + "GET \(base)/anything/upgrade HTTP/1.1\r\nHost: \(authority)\r\nConnection: Upgrade\r\n"
                + "Upgrade: websocket\r\n\r\n"
                + "GET \(base)/anything/last HTTP/1.1\r\nHost: \(authority)\r\nConnection: close\r\n\r\n"
        }
        // httpbin refuses the second upgrade itself (400, not 101): the connection reads on.
        #expect(statuses == ["200", "403", "403", "400", "200"], "\(answer)")
        #expect(
            records.map(\.request.url)
                == ["chunked", "admin", "admin", "upgrade", "last"].map { "\(base)/anything/\($0)" })
        #expect(records.map(\.outcome.kind) == [.response, .blocked, .blocked, .response, .response])
        let accessLog = try String(contentsOfFile: Servers.variable("HTTPBIN_ACCESS_LOG"), encoding: .utf8)
        #expect(accessLog.contains("/anything/last"))
    }

    @Test("a host name that resolves to a blocked address is refused before connecting, and nothing is sent")
    func blockedAddressRefused() async throws {
        let proxy = try await RunningProxy(
            rules: "[block] field=host message=\"No loopback\"\nloop ^(127\\.0\\.0\\.1|::1)$")
        let port = try Self.httpbinPort()
        let marker = "address-\(UUID().uuidString)"
        let answer = try Self.send("GET", "http://localhost:\(port)/anything/\(marker)", to: proxy)
        let records = try await proxy.finish()
        #expect(answer.hasPrefix("HTTP/1.1 403 Forbidden\r\n"), "\(answer)")
        let body = try jsonObject(answer)
        #expect(body["error"] as? String == "blocked-address")
        #expect(body["rule"] as? String == "p/loop")
        #expect(records.map(\.outcome.kind) == [.blocked])
        #expect(records.first?.decision.verdict == .pass)
        #expect(records.first?.outcome.error?.description.contains("localhost resolves to") == true)
        let accessLog = try String(contentsOfFile: Servers.variable("HTTPBIN_ACCESS_LOG"), encoding: .utf8)
        #expect(!accessLog.contains(marker))
    }

    @Test("a host name is resolved once and connected to at the addresses checked")
    func resolvedNameConnected() async throws {
        let proxy = try await RunningProxy(rules: "[block] field=host\nother ^192\\.0\\.2\\.1$")
        let port = try Self.httpbinPort()
        let answer = try Self.send("GET", "http://localhost:\(port)/anything/by-name", to: proxy)
        let records = try await proxy.finish()
        #expect(answer.hasPrefix("HTTP/1.1 200 OK\r\n"), "\(answer.prefix(300))")
        #expect(records.map(\.outcome.status) == [200])
    }

    @Test("a CONNECT to a name that resolves to a blocked address is refused before connecting")
    func blockedAddressTunnel() async throws {
        let proxy = try await RunningProxy(rules: "[block] field=host\nloop ^(127\\.0\\.0\\.1|::1)$")
        let port = try Self.httpbinPort()
        let connection = try RawConnection(port: proxy.server.port ?? 0)
        connection.send("CONNECT localhost:\(port) HTTP/1.1\r\nHost: localhost:\(port)\r\n\r\n")
        let answer = connection.readToEnd()
        let records = try await proxy.finish()
        #expect(answer.hasPrefix("HTTP/1.1 403 Forbidden\r\n"), "\(answer)")
        #expect(try jsonObject(answer)["error"] as? String == "blocked-address")
        #expect(records.map(\.outcome.kind) == [.blocked])
    }

    @Test("the server gets the canonical request line, the decided Host and the transfer codings as sent")
    func forwardedBytes() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let base = try Servers.variable("UPGRADE_URL").replacingOccurrences(of: "/echo", with: "")
        let connection = try RawConnection(port: proxy.server.port ?? 0)
        connection.send(
            "POST \(base)/x/%2e%2e/raw?%61=1#f HTTP/1.1\r\nHost: \(hostHeader(of: base))\r\n"
                + "Transfer-Encoding: gzip, chunked\r\nConnection: close\r\n\r\n5\r\nhello\r\n0\r\n\r\n")
        let answer = connection.readToEnd()
        let records = try await proxy.finish()
        let received = answer.components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n")
        let lines = received.components(separatedBy: "\r\n")
        #expect(lines.first == "POST /raw?a=1 HTTP/1.1", "\(answer)")
        #expect(lines.filter { $0.lowercased().hasPrefix("host:") } == ["Host: \(hostHeader(of: base))"])
        #expect(lines.contains("Transfer-Encoding: gzip, chunked"), "\(received)")
        #expect(received.hasSuffix("5\r\nhello\r\n0\r\n\r\n"), "\(received)")
        #expect(records.first?.request.url == "\(base)/raw?a=1")
    }
}
