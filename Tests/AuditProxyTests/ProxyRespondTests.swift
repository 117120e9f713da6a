import AuditPipeline
import AuditPolicy
import AuditProxy
import AuditReport
import Foundation
import Testing

/// `respond` rules served by the proxy to real clients: nothing reaches the server.
@Suite(.serialized) struct ProxyRespondTests {
    /// `Tests/Servers/www/NAME`, which nginx serves too.
    static func wwwFile(_ name: String) -> String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Servers/www/\(name)").path
    }

    static func rules() throws -> String {
        let page = try NSRegularExpression.escapedPattern(for: Servers.nginx + "/page.html")
        return #"""
            [respond 200] file=\#(wwwFile("page.html")) type=text/html
            page ^\#(page)(\?.*)?$
            [respond 200] body="{\"service\":\"$1\",\"status\":\"ok\"}" type=application/json
            health ^http://([a-z]+)\.mock\.invalid/health$
            [respond 200]
            tls ^https://local\.invalid
            [respond handler:native]
            native /native/
            """#
    }

    /// What nginx has logged so far.
    static func nginxLog() throws -> String {
        try String(contentsOfFile: Servers.variable("NGINX_ACCESS_LOG"), encoding: .utf8)
    }

    @Test("curl gets a rule's file as nginx would serve it, with the rule named, and nginx sees nothing")
    func fileResponder() async throws {
        let proxy = try await RunningProxy(rules: try Self.rules())
        let direct = try runClient("curl", ["-sS", try Servers.nginx + "/page.html"])
        let marker = "local-\(UUID().uuidString)"
        let run = try runClient("curl", ["-sS", "-i", "-x", proxy.address, try Servers.nginx + "/page.html?\(marker)"])
        let records = try await proxy.finish()
        #expect(run.status == 0, "\(run.errors)")
        #expect(try !Self.nginxLog().contains(marker))
        let (head, body) = try #require(split(run.output))
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(head.contains("Content-Type: text/html\r\n"))
        #expect(head.contains("Content-Length: 219\r\n"))
        #expect(head.contains("X-Request-Audit-Rule: p/page\r\n"))
        #expect(body == direct.output)
        #expect(records.map(\.decision.verdict) == [.respond])
        #expect(records.map(\.outcome.kind) == [.responded])
        #expect(records.first?.outcome.status == 200)
        #expect(records.first?.outcome.bytes == 219)
    }

    @Test("Python requests gets a body responder's JSON with the capture substituted")
    func bodyResponder() async throws {
        let proxy = try await RunningProxy(rules: try Self.rules())
        let script = """
            import json, requests
            r = requests.get("http://billing.mock.invalid/health", proxies={"http": "\(proxy.address)"})
            print(r.status_code, r.headers["Content-Type"], json.dumps(r.json(), sort_keys=True))
            """
        let run = try runClient("python3", ["-c", script])
        let records = try await proxy.finish()
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output == #"200 application/json {"service": "billing", "status": "ok"}"# + "\n")
        #expect(records.map(\.outcome.kind) == [.responded])
    }

    @Test("a local answer keeps the connection: the next request on it goes to the server")
    func keepAlive() async throws {
        let proxy = try await RunningProxy(rules: try Self.rules())
        let run = try runClient(
            "curl", ["-sS", "-x", proxy.address, "http://api.mock.invalid/health", try Servers.nginx + "/small.txt"])
        let records = try await proxy.finish()
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output == #"{"service":"api","status":"ok"}"# + String(repeating: "x", count: 1_024))
        #expect(records.map(\.outcome.kind) == [.responded, .response])
    }

    @Test("a CONNECT a respond rule matches is refused: the proxy cannot answer inside TLS")
    func connectRefused() async throws {
        let proxy = try await RunningProxy(rules: try Self.rules())
        let run = try runClient("curl", ["-sS", "-v", "-x", proxy.address, "https://local.invalid/x"])
        let records = try await proxy.finish()
        #expect(run.status != 0)
        #expect(run.errors.contains("403"))
        #expect(records.map(\.outcome.kind) == [.blocked])
        #expect(records.first?.decision.verdict == .respond)
    }

    @Test("a handler rule is refused with 403 respond-unavailable naming the handler, and nothing is sent")
    func handlerRefused() async throws {
        let proxy = try await RunningProxy(rules: try Self.rules())
        let marker = "native/\(UUID().uuidString)"
        let run = try runClient("curl", ["-sS", "-x", proxy.address, try Servers.httpbin + "/anything/\(marker)"])
        let records = try await proxy.finish()
        let body = try jsonObject(run.output)
        #expect(body["error"] as? String == "respond-unavailable")
        #expect(body["rule"] as? String == "p/native")
        #expect((body["hint"] as? String)?.contains("'native'") == true)
        let accessLog = try String(contentsOfFile: Servers.variable("HTTPBIN_ACCESS_LOG"), encoding: .utf8)
        #expect(!accessLog.contains(marker))
        #expect(records.map(\.outcome.kind) == [.blocked])
    }
}
