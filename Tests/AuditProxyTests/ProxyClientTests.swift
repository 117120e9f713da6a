import AuditPipeline
import AuditPolicy
import AuditProxy
import AuditReport
import Foundation
import Testing

/// The proxy driven by real clients (curl, Python requests, headless Chromium) against nginx and
/// httpbin on loopback.
@Suite(.serialized) struct ProxyClientTests {
    static let rules = """
        [block] message="No trackers"
        tracker ^https?://tracker\\.invalid(/|:|$)
        [block] field=path message="No admin pages"
        admin ^/admin
        [warn] field=path message="Deletes things"
        deletes ^/anything/delete
        [redirect http://127.0.0.1:1/] field=path
        moved ^/moved-never-used
        [record] field=host
        local ^127\\.0\\.0\\.1$
        """

    @Test("curl over plain HTTP gets the server's body, and the request is recorded once")
    func curlPlainHTTP() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let url = try Servers.nginx + "/small.txt"
        let run = try runClient("curl", ["-sS", "-x", proxy.address, url])
        let records = try await proxy.finish()
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output == String(repeating: "x", count: 1_024))
        #expect(records.count == 1)
        #expect(records.first?.request.url == url)
        #expect(records.first?.outcome.kind == .response)
        #expect(records.first?.outcome.status == 200)
        #expect(records.first?.outcome.bytes == 1_024)
        #expect(records.first?.decision.recorded == ["p/local"])
    }

    @Test("curl over HTTPS goes through a CONNECT tunnel, recorded as https://HOST:PORT with bytes each way")
    func curlThroughTunnel() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let url = try Servers.nginxTLS + "/small.txt"
        let run = try runClient("curl", ["-sS", "--cacert", try Servers.nginxCA, "-x", proxy.address, url])
        let records = try await proxy.finish()
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output == String(repeating: "x", count: 1_024))
        #expect(records.count == 1)
        let record = try #require(records.first)
        #expect(record.request.method == "CONNECT")
        #expect(try record.request.url == Servers.nginxTLS + "/")
        #expect(record.outcome.kind == .tunnel)
        #expect((record.outcome.bytes ?? 0) > 1_024)
        #expect((record.outcome.sentBytes ?? 0) > 100)
    }

    @Test("a blocked plain request gets 403 JSON naming the rule, and nothing reaches the server")
    func blockedPlainRequest() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let marker = "admin-\(UUID().uuidString)"
        let run = try runClient("curl", ["-sS", "-i", "-x", proxy.address, try Servers.httpbin + "/admin/\(marker)"])
        let records = try await proxy.finish()
        let body = try jsonObject(run.output)
        #expect(run.output.hasPrefix("HTTP/1.1 403 Forbidden\r\n"))
        #expect(run.output.contains("X-Request-Audit-Rule: p/admin\r\n"))
        #expect(run.output.contains("Content-Type: application/json\r\n"))
        #expect(body["error"] as? String == "blocked")
        #expect(body["rule"] as? String == "p/admin")
        #expect(body["category"] as? String == "p")
        #expect(body["message"] as? String == "No admin pages")
        #expect(body["requestID"] as? String == records.first?.id.uuidString)
        #expect(records.map(\.outcome.kind) == [.blocked])
        let accessLog = try String(contentsOfFile: Servers.variable("HTTPBIN_ACCESS_LOG"), encoding: .utf8)
        #expect(!accessLog.contains(marker))
    }

    @Test("a CONNECT to a blocked host gets the same 403, and no tunnel opens")
    func blockedConnect() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let run = try runClient("curl", ["-sS", "-v", "-x", proxy.address, "https://tracker.invalid/t.js"])
        let records = try await proxy.finish()
        #expect(run.status != 0)
        #expect(run.errors.contains("< HTTP/1.1 403 Forbidden"))
        #expect(run.errors.contains("< X-Request-Audit-Rule: p/tracker"))
        #expect(records.map(\.request.url) == ["https://tracker.invalid/"])
        #expect(records.map(\.outcome.kind) == [.blocked])
    }

    @Test("a warning is denied with a JSON answer that says how to acknowledge it; the acknowledged retry proceeds")
    func warningAcknowledged() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let url = try Servers.httpbin + "/anything/delete/1"
        let first = try runClient("curl", ["-sS", "-i", "-x", proxy.address, url])
        let answer = try jsonObject(first.output)
        let acknowledge = try #require(answer["acknowledge"] as? [String: String])
        let header = try #require(acknowledge["header"])
        let value = try #require(acknowledge["value"])
        let retry = try runClient(
            "curl",
            ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-H", "\(header): \(value)", "-x", proxy.address, url])
        let records = try await proxy.finish()
        #expect(first.output.hasPrefix("HTTP/1.1 403 Forbidden\r\n"))
        #expect(answer["error"] as? String == "warning")
        #expect(answer["rule"] as? String == "p/deletes")
        #expect(answer["message"] as? String == "Deletes things")
        #expect((answer["hint"] as? String)?.contains("Audit-Acknowledge: p/deletes") == true)
        #expect(retry.output == "200")
        #expect(records.map(\.outcome.kind) == [.warningDeclined, .response])
        #expect(records.map(\.warning?.decidedBy) == [.default, .acknowledged])
        #expect(records.last?.request.headers.contains { $0.name == "Audit-Acknowledge" } == true)
    }

    @Test("with warnings allowed, a warned request proceeds and is recorded")
    func warningAllowed() async throws {
        let proxy = try await RunningProxy(rules: Self.rules) { $0.warnings = .allow }
        let run = try runClient(
            "curl",
            [
                "-sS", "-o", "/dev/null", "-w", "%{http_code}", "-x", proxy.address,
                try Servers.httpbin + "/anything/delete/2",
            ])
        let records = try await proxy.finish()
        #expect(run.output == "200")
        #expect(records.map(\.warning) == [WarningResolution(decision: .proceed, decidedBy: .default)])
    }

    @Test("a redirect rule sends a plain request to its target")
    func redirectRule() async throws {
        let target = try Servers.nginx + "/small.txt"
        let proxy = try await RunningProxy(rules: "[redirect \(target)] field=path\nold ^/old-place\n")
        let run = try runClient("curl", ["-sS", "-x", proxy.address, try Servers.httpbin + "/old-place"])
        let records = try await proxy.finish()
        #expect(run.output == String(repeating: "x", count: 1_024))
        #expect(records.first?.outcome.forwardedURL == target)
        #expect(records.first?.outcome.status == 200)
    }

    @Test("keep-alive: several requests on one client connection each get their answer and their record")
    func keepAlive() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let base = try Servers.nginx
        let run = try runClient(
            "curl",
            ["-sS", "-x", proxy.address, "-w", "%{http_code}:%{num_connects} "]
                + Array(repeating: ["-o", "/dev/null"], count: 4).flatMap { $0 }
                + [base + "/small.txt", base + "/pixel.svg", try Servers.httpbin + "/admin/x", base + "/small.txt"])
        let records = try await proxy.finish()
        #expect(run.status == 0, "\(run.errors)")
        #expect(records.map(\.outcome.kind) == [.response, .response, .blocked, .response])
        // curl opened one connection to the proxy for all four.
        #expect(run.output == "200:1 200:0 403:0 200:0 ")
    }

    @Test("a request body is streamed to the server and its size recorded")
    func uploadBody() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("upload-\(UUID().uuidString)")
        try Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 7) }).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try runClient(
            "curl",
            [
                "-sS", "-x", proxy.address, "--data-binary", "@\(file.path)", "-H",
                "Content-Type: application/octet-stream", try Servers.httpbin + "/anything",
            ])
        let records = try await proxy.finish()
        let echoed = try #require(try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any])
        #expect((echoed["headers"] as? [String: String])?["Content-Length"] == "3000000")
        #expect(records.first?.outcome.sentBytes == 3_000_000)
        #expect(records.first?.request.bodyBytes == 3_000_000)
    }

    @Test("a shadow policy is decided beside the live one: the live verdict is enforced, the shadow's recorded")
    func shadowPolicy() async throws {
        let shadow = try Policy(parsing: "[block] message=\"Stricter\"\nno-small /small\\.txt$\n", file: "s.rules")
        let proxy = try await RunningProxy(rules: Self.rules) { $0.pipeline.shadowPolicy = shadow }
        let run = try runClient(
            "curl",
            ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-x", proxy.address, try Servers.nginx + "/small.txt"])
        let records = try await proxy.finish()
        #expect(run.output == "200")
        #expect(records.map(\.decision.verdict) == [.pass])
        #expect(records.first?.decision.shadow?.verdict == .block)
        #expect(records.first?.decision.shadow?.rule == "s/no-small")
    }

    @Test("Python requests with HTTPS_PROXY reaches a TLS server through the proxy")
    func pythonRequests() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let script =
            "import requests, sys; r = requests.get(sys.argv[1], verify=sys.argv[2]); print(r.status_code, len(r.content))"
        let run = try runClient(
            "python3", ["-c", script, try Servers.nginxTLS + "/small.txt", try Servers.nginxCA],
            environment: ["HTTPS_PROXY": proxy.address])
        let records = try await proxy.finish()
        #expect(run.output == "200 1024\n", "\(run.errors)")
        #expect(records.map(\.outcome.kind) == [.tunnel])
    }

    @Test("headless Chromium loads a page whose blocked subresource is refused, and every request is in the log")
    func chromiumPage() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let page = try Servers.nginx + "/page.html"
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent("chromium-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: profile) }
        let run = try runClient(
            "chromium",
            [
                "--headless=new", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(profile.path)",
                "--proxy-server=\(proxy.address)", "--proxy-bypass-list=<-loopback>", "--virtual-time-budget=3000",
                "--dump-dom", page,
            ])
        let records = try await proxy.finish()
        #expect(run.output.contains("<h1 id=\"loaded\">The page loaded</h1>"), "\(run.errors.suffix(2_000))")
        let byURL = Dictionary(records.map { ($0.request.url, $0) }, uniquingKeysWith: { first, _ in first })
        #expect(byURL[page]?.outcome.status == 200)
        #expect(try byURL[Servers.nginx + "/pixel.svg"]?.outcome.status == 200)
        #expect(byURL["http://tracker.invalid/track.js"]?.outcome.kind == .blocked)
        #expect(byURL["http://tracker.invalid/track.js"]?.decision.rule == "p/tracker")
    }
}
