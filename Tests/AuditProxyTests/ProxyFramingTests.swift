import AuditReport
import Foundation
import NIOCore
import Testing

@testable import AuditProxy

/// Every framing of issue 59 through the proxy's real handlers on in-memory channels: what reaches
/// the server byte for byte, what the client gets, and one record per request. The same framings
/// against real servers are in `CanonicalRequestProxyTests`.
@Suite struct ProxyFramingTests {
    static let rules = """
        [block] field=path
        admin ^/admin
        [block]
        address ^http://10\\.9\\.8\\.7/
        """

    @Test("the canonical request target goes upstream, with the Host of the decided URL")
    func canonicalTarget() async throws {
        let proxy = try EmbeddedProxy(rules: Self.rules)
        try proxy.send("GET http://A.Test.:8080/x/../%61pi//v1?%71=1#top HTTP/1.1\r\nHost: a.test.:8080\r\n\r\n")
        let sent = try proxy.sent(toServer: 0)
        #expect(sent.statusLine == "GET /api/v1?q=1 HTTP/1.1")
        #expect(sent.contains("\r\nHost: a.test:8080\r\n"))
        #expect(!sent.contains("a.test.:8080"))
        try proxy.reply(fromServer: 0, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        let answer = try proxy.answer()
        #expect(answer.statusLine == "HTTP/1.1 200 OK")
        #expect(answer.body == "ok")
        let records = try await proxy.records()
        #expect(records.map(\.request.url) == ["http://a.test:8080/api/v1?q=1"])
        #expect(records.first?.request.receivedURL == "http://A.Test.:8080/x/../%61pi//v1?%71=1#top")
    }

    @Test(
        "a spelling of a blocked path is refused, and nothing is sent",
        arguments: [
            "/%61dmin", "/x/../admin", "//admin", "/./admin", "/%2e/admin", "/x/%2E%2E/admin", "/ADMIN/../admin",
        ])
    func blockedSpelling(path: String) async throws {
        let proxy = try EmbeddedProxy(rules: Self.rules)
        try proxy.send("GET http://a.test\(path) HTTP/1.1\r\nHost: a.test\r\n\r\n")
        let answer = try proxy.answer()
        #expect(answer.statusLine == "HTTP/1.1 403 Forbidden")
        #expect(answer.contains("X-Request-Audit-Rule: p/admin"))
        #expect(proxy.servers.isEmpty)
        #expect(try await proxy.records().map(\.decision.verdict) == [.block])
    }

    @Test("a Host that names another server is refused with 400, and the connection closes")
    func contradictingHost() async throws {
        let proxy = try EmbeddedProxy(rules: Self.rules)
        try proxy.send("GET http://a.test/ HTTP/1.1\r\nHost: forbidden.test\r\n\r\n")
        let answer = try proxy.answer()
        #expect(answer.statusLine == "HTTP/1.1 400 Bad Request")
        #expect(answer.contains("Connection: close"))
        #expect(answer.body.contains("names another server"))
        #expect(proxy.servers.isEmpty)
    }

    @Test("two Host headers are refused with 400, even when they agree")
    func twoHosts() throws {
        let proxy = try EmbeddedProxy(rules: Self.rules)
        try proxy.send("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nHost: a.test\r\n\r\n")
        let answer = try proxy.answer()
        #expect(answer.statusLine == "HTTP/1.1 400 Bad Request")
        #expect(answer.body.contains("2 Host headers"))
        #expect(proxy.servers.isEmpty)
    }

    @Test("a Host that spells the same authority otherwise is accepted and replaced")
    func equivalentHost() throws {
        let proxy = try EmbeddedProxy(rules: Self.rules)
        try proxy.send("GET http://127.0.0.1:8080/ HTTP/1.1\r\nHost: 0x7F.1:8080\r\n\r\n")
        let sent = try proxy.sent(toServer: 0)
        #expect(sent.contains("\r\nHost: 127.0.0.1:8080\r\n"))
        #expect(!sent.contains("0x7F"))
    }

    @Test("an invalid URL is refused with 403 naming why, and recorded")
    func invalidURL() async throws {
        let proxy = try EmbeddedProxy(rules: Self.rules)
        try proxy.send("GET http://a.test:99999/ HTTP/1.1\r\nHost: a.test:99999\r\n\r\n")
        let answer = try proxy.answer()
        #expect(answer.statusLine == "HTTP/1.1 403 Forbidden")
        #expect(answer.body.contains("invalid-url"))
        #expect(proxy.servers.isEmpty)
        #expect(try await proxy.records().count == 1)
    }

    @Test("a host resolving to a blocked address is refused before any connection")
    func blockedAddress() async throws {
        let proxy = try EmbeddedProxy(rules: Self.rules, addresses: ["inside.test": "10.9.8.7"])
        try proxy.send("GET http://inside.test/ HTTP/1.1\r\nHost: inside.test\r\n\r\n")
        let answer = try proxy.answer()
        #expect(answer.statusLine == "HTTP/1.1 403 Forbidden")
        #expect(answer.body.contains("blocked-address"))
        #expect(proxy.servers.isEmpty)
        let records = try await proxy.records()
        #expect(records.count == 1)
        #expect(records.first?.outcome.kind == .blocked)
    }

    @Test("CONNECT to a port outside the allowed list gets 403 and is recorded; the connection closes")
    func connectPort() async throws {
        let proxy = try EmbeddedProxy(rules: Self.rules)
        try proxy.send("CONNECT a.test:80 HTTP/1.1\r\nHost: a.test:80\r\n\r\n")
        let answer = try proxy.answer()
        #expect(answer.statusLine == "HTTP/1.1 403 Forbidden")
        #expect(answer.body.contains("connect-port"))
        #expect(!proxy.client.isActive)
        #expect(proxy.servers.isEmpty)
        #expect(try await proxy.records().count == 1)
    }

    @Test("CONNECT to an allowed port is answered 200, then spliced byte for byte, and recorded once")
    func connectTunnel() async throws {
        let proxy = try EmbeddedProxy(rules: Self.rules)
        try proxy.send("CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n")
        #expect(try proxy.answer().statusLine == "HTTP/1.1 200 OK")
        try proxy.send("\u{16}\u{03}\u{01}hello")
        #expect(try proxy.sent(toServer: 0) == "\u{16}\u{03}\u{01}hello")
        try proxy.reply(fromServer: 0, "world")
        #expect(try proxy.answer() == "world")
        proxy.closeClient()
        let records = try await proxy.records()
        #expect(records.map(\.outcome.kind) == [.tunnel])
    }

    @Test("plain bytes into a spliced tunnel to 443 are refused: nothing reaches the server, recorded as failed")
    func connectTunnelNotTLS() async throws {
        let proxy = try EmbeddedProxy(rules: Self.rules)
        try proxy.send("CONNECT a.test:443 HTTP/1.1\r\nHost: a.test:443\r\n\r\n")
        #expect(try proxy.answer().statusLine == "HTTP/1.1 200 OK")
        try proxy.send("GET /admin HTTP/1.1\r\nHost: a.test\r\n\r\n")
        #expect(try proxy.sent(toServer: 0) == "")
        let records = try await proxy.records()
        #expect(records.map(\.outcome.kind) == [.failure])
        #expect(records.first?.outcome.error?.description.contains("no TLS handshake") == true)
    }

    @Test("an upgrade to h2c is not made: the request goes on without Upgrade and HTTP2-Settings")
    func h2cNotMade() throws {
        let proxy = try EmbeddedProxy(rules: Self.rules)
        try proxy.send(
            "GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nConnection: Upgrade, HTTP2-Settings\r\n"
                + "Upgrade: h2c\r\nHTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA\r\n\r\n")
        let sent = try proxy.sent(toServer: 0)
        #expect(sent.statusLine == "GET / HTTP/1.1")
        #expect(!sent.lowercased().contains("upgrade"))
        #expect(!sent.lowercased().contains("http2-settings"))
    }

    @Test("a WebSocket upgrade is decided, then spliced after the server's 101")
    func webSocketSpliced() async throws {
        let proxy = try EmbeddedProxy(rules: Self.rules)
        try proxy.send(
            "GET http://a.test/ws HTTP/1.1\r\nHost: a.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
                + "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
        let sent = try proxy.sent(toServer: 0)
        #expect(sent.contains("\r\nUpgrade: websocket\r\n"))
        try proxy.reply(
            fromServer: 0, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
        #expect(try proxy.answer().statusLine == "HTTP/1.1 101 Switching Protocols")
        try proxy.send("\u{81}\u{02}hi")
        #expect(try proxy.sent(toServer: 0) == "\u{81}\u{02}hi")
        try proxy.reply(fromServer: 0, "\u{81}\u{02}yo")
        #expect(try proxy.answer() == "\u{81}\u{02}yo")
        proxy.closeClient()
        let records = try await proxy.records()
        #expect(records.count == 1)
        #expect(records.first?.outcome.status == 101)
    }

    @Test("pipelined requests are answered in order, each decided, sent and recorded once")
    func pipelining() async throws {
        let proxy = try EmbeddedProxy(rules: Self.rules)
        try proxy.send(
            "GET http://a.test/one HTTP/1.1\r\nHost: a.test\r\n\r\n"
                + "GET http://a.test/admin HTTP/1.1\r\nHost: a.test\r\n\r\n"
                + "POST http://a.test/three HTTP/1.1\r\nHost: a.test\r\nContent-Length: 3\r\n\r\nabc")
        // One request at a time: the second waits for the first's answer.
        #expect(try proxy.sent(toServer: 0) == "GET /one HTTP/1.1\r\nHost: a.test\r\n\r\n")
        try proxy.reply(fromServer: 0, "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\none")
        #expect(try proxy.sent(toServer: 0) == "POST /three HTTP/1.1\r\nContent-Length: 3\r\nHost: a.test\r\n\r\nabc")
        try proxy.reply(fromServer: 0, "HTTP/1.1 201 Created\r\nContent-Length: 5\r\n\r\nthree")
        #expect(
            try proxy.answer().statusLines == ["HTTP/1.1 200 OK", "HTTP/1.1 403 Forbidden", "HTTP/1.1 201 Created"])
        #expect(proxy.servers.count == 1)
        let records = try await proxy.records()
        #expect(records.map(\.request.url) == ["http://a.test/one", "http://a.test/admin", "http://a.test/three"])
    }

    @Test("the body of a refused request is read and dropped, and the request behind it is served")
    func pipeliningAfterRefusedBody() async throws {
        let proxy = try EmbeddedProxy(rules: Self.rules)
        try proxy.send(
            "POST http://a.test/admin HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "5\r\nGET /\r\n0\r\n\r\n"
                + "GET http://a.test/next HTTP/1.1\r\nHost: a.test\r\n\r\n")
        #expect(try proxy.sent(toServer: 0) == "GET /next HTTP/1.1\r\nHost: a.test\r\n\r\n")
        try proxy.reply(fromServer: 0, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(try proxy.answer().statusLines == ["HTTP/1.1 403 Forbidden", "HTTP/1.1 200 OK"])
        #expect(try await proxy.records().count == 2)
    }

    @Test("a request pipelined after an upgrade the proxy refuses is answered, sent and recorded")
    func pipeliningAfterRefusedUpgrade() async throws {
        let proxy = try EmbeddedProxy(rules: Self.rules)
        try proxy.send(
            "GET http://a.test/admin HTTP/1.1\r\nHost: a.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
                + "GET http://a.test/next HTTP/1.1\r\nHost: a.test\r\n\r\n")
        #expect(try proxy.sent(toServer: 0) == "GET /next HTTP/1.1\r\nHost: a.test\r\n\r\n")
        try proxy.reply(fromServer: 0, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(try proxy.answer().statusLines == ["HTTP/1.1 403 Forbidden", "HTTP/1.1 200 OK"])
        #expect(try await proxy.records().map(\.request.url) == ["http://a.test/admin", "http://a.test/next"])
    }

    @Test("a request pipelined after an upgrade the server answers without 101 is answered, sent and recorded")
    func pipeliningAfterUpgradeNotMade() async throws {
        let proxy = try EmbeddedProxy(rules: Self.rules)
        try proxy.send(
            "GET http://a.test/ws HTTP/1.1\r\nHost: a.test\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
                + "GET http://a.test/next HTTP/1.1\r\nHost: a.test\r\n\r\n")
        #expect(try proxy.sent(toServer: 0).statusLine == "GET /ws HTTP/1.1")
        try proxy.reply(fromServer: 0, "HTTP/1.1 426 Upgrade Required\r\nContent-Length: 0\r\n\r\n")
        #expect(try proxy.sent(toServer: 0) == "GET /next HTTP/1.1\r\nHost: a.test\r\n\r\n")
        try proxy.reply(fromServer: 0, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(try proxy.answer().statusLines == ["HTTP/1.1 426 Upgrade Required", "HTTP/1.1 200 OK"])
        #expect(try await proxy.records().compactMap(\.outcome.status) == [426, 200])
    }

    @Test("transfer codings are kept as sent: gzip, chunked goes up framed as the client framed it")
    func transferCodingsKept() throws {
        let proxy = try EmbeddedProxy(rules: Self.rules)
        let body = "4\r\nGZ\u{01}\u{02}\r\n3\r\nxyz\r\n0\r\n\r\n"
        try proxy.send(
            "POST http://a.test/up HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n" + body)
        let sent = try proxy.sent(toServer: 0)
        #expect(sent.contains("\r\nTransfer-Encoding: gzip, chunked\r\n"))
        #expect(sent.hasSuffix("\r\n\r\n" + body))
    }

    @Test("a request with both Content-Length and Transfer-Encoding is refused with 400")
    func contentLengthAndChunked() throws {
        let proxy = try EmbeddedProxy(rules: Self.rules)
        try proxy.send(
            "POST http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "0\r\n\r\n")
        #expect(try proxy.answer().statusLine == "HTTP/1.1 400 Bad Request")
        #expect(proxy.servers.isEmpty)
    }

    @Test(
        "a server that answers before the request's body ends: the rest is dropped, the next request served on a new server connection"
    )
    func earlyResponse() async throws {
        let proxy = try EmbeddedProxy(rules: Self.rules)
        try proxy.send("POST http://a.test/up HTTP/1.1\r\nHost: a.test\r\nContent-Length: 6\r\n\r\nabc")
        _ = try proxy.sent(toServer: 0)
        try proxy.reply(fromServer: 0, "HTTP/1.1 413 Content Too Large\r\nContent-Length: 0\r\n\r\n")
        #expect(try proxy.answer().statusLine.hasPrefix("HTTP/1.1 413 "))
        // The server still waits for 3 bytes of body: the next request on its connection would be read as them.
        #expect(!proxy.servers[0].isActive)
        try proxy.send("def" + "GET http://a.test/next HTTP/1.1\r\nHost: a.test\r\n\r\n")
        #expect(try proxy.sent(toServer: 0) == "")
        #expect(try proxy.sent(toServer: 1) == "GET /next HTTP/1.1\r\nHost: a.test\r\n\r\n")
        try proxy.reply(fromServer: 1, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
        #expect(try proxy.answer().statusLine == "HTTP/1.1 200 OK")
        let records = try await proxy.records()
        #expect(records.compactMap(\.outcome.status) == [413, 200])
        #expect(records.first?.outcome.sentBytes == 3)
    }

    @Test("a response cut short by the server is recorded as a failure, and the client connection closes")
    func cutShort() async throws {
        let proxy = try EmbeddedProxy(rules: Self.rules)
        try proxy.send("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n")
        try proxy.reply(fromServer: 0, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc")
        proxy.closeServer(0)
        #expect(!proxy.client.isActive)
        let records = try await proxy.records()
        #expect(records.map(\.outcome.kind) == [.failure])
    }

    @Test("a server connection that closes before answering gets the client a 502")
    func closedBeforeAnswer() async throws {
        let proxy = try EmbeddedProxy(rules: Self.rules)
        try proxy.send("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n")
        proxy.closeServer(0)
        let answer = try proxy.answer()
        #expect(answer.statusLine == "HTTP/1.1 502 Bad Gateway")
        #expect(try await proxy.records().map(\.outcome.kind) == [.failure])
    }
}
