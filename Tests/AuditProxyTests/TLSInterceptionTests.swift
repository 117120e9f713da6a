import AuditCache
import AuditPipeline
import AuditPolicy
import AuditProxy
import AuditReport
import AuditTLS
import Foundation
import Testing

/// `audit proxy --intercept-tls` driven by real clients (curl, Python requests with strict X.509
/// checks, headless Chromium) against nginx serving TLS with a certificate from a test CA.
@Suite(.serialized) struct TLSInterceptionTests {
    /// A proxy intercepting TLS with a CA of its own, trusting the test CA upstream; its CA's
    /// certificate is written to `caPath` for the clients.
    final class InterceptingProxy: Sendable {
        let proxy: RunningProxy
        let caPath: String

        init(
            rules: String, scope: TLSInterceptionSettings.Scope = .all, passthrough: [String] = [],
            warnings: ProxyConfiguration.WarningMode = .deny, connectPorts: Set<Int>? = [443],
            cache: HTTPCache? = nil
        ) async throws {
            let authority = try CertificateAuthority.generate()
            let settings = try TLSInterceptionSettings(
                authority: authority, scope: scope, passthrough: passthrough, upstreamRootFiles: [Servers.nginxCA])
            proxy = try await RunningProxy(rules: rules) { configuration in
                configuration.tlsInterception = settings
                configuration.warnings = warnings
                // As audit proxy has it by default: spliced tunnels to 443 only; intercepted ones anywhere.
                configuration.connectPorts = connectPorts
                configuration.cache = cache
            }
            caPath = proxy.folder + "/ca.pem"
            try authority.certificatePEM.write(toFile: caPath, atomically: true, encoding: .utf8)
        }

        var address: String { proxy.address }

        /// curl through the proxy, trusting its CA.
        func curl(_ arguments: [String]) throws -> ClientRun {
            try runClient("curl", ["-sS", "--cacert", caPath, "-x", address] + arguments)
        }

        func finish() async throws -> [AuditRecord] { try await proxy.finish() }
    }

    static let rules = """
        [block] field=path message="No admin pages"
        admin ^/admin
        [block] methods=POST,PUT,DELETE message="Read only"
        writes ^https://127\\.0\\.0\\.1:[0-9]+/api/
        [respond 200] body="{\\"mocked\\":\\"$1\\"}" type=application/json
        mock ^https://127\\.0\\.0\\.1:[0-9]+/mock/(\\w+)$
        [warn] field=path message="Deletes things"
        deletes ^/delete
        """

    @Test(
        "inside an intercepted tunnel a response within stale-while-revalidate is served stale and revalidated over TLS in the background"
    )
    func staleWhileRevalidateInsideTLS() async throws {
        let cache = try HTTPCache(
            directory: NSTemporaryDirectory() + "tls-swr-" + UUID().uuidString, maximumBytes: 8 << 20, isShared: true)
        let proxy = try await InterceptingProxy(
            rules: "[cache]\nall ^https://\n", scope: .selective, connectPorts: nil, cache: cache)
        let marker = "tls-swr-\(UUID().uuidString)"
        let url = try Servers.nginxTLS + "/swr/small.txt?\(marker)"
        _ = try proxy.curl([url])
        try await Task.sleep(for: .milliseconds(1_100))
        let stale = try proxy.curl([url])
        // nginx answers the background request's If-None-Match with 304: the entry is fresh again.
        let nginxLog = try Servers.variable("NGINX_ACCESS_LOG")
        let deadline = ContinuousClock.now + .seconds(20)
        var lines: [String] = []
        while lines.count < 2, ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(100))
            lines = try String(contentsOfFile: nginxLog, encoding: .utf8).components(separatedBy: "\n")
                .filter { $0.contains(marker) }
        }
        let records = try await proxy.finish()
        #expect(stale.output == String(repeating: "x", count: 1_024))
        #expect(lines.count == 2)
        #expect(lines.last?.contains("\" 304 ") == true)
        let gets = records.filter { $0.request.method == "GET" }
        #expect(gets.map(\.outcome.kind) == [.stored, .stale])
    }

    @Test("inside an intercepted tunnel a cache rule stores nginx's HTTPS response and serves it again")
    func cacheInsideTLS() async throws {
        let cache = try HTTPCache(
            directory: NSTemporaryDirectory() + "tls-cache-" + UUID().uuidString, maximumBytes: 8 << 20, isShared: true)
        let proxy = try await InterceptingProxy(
            rules: "[cache]\nall ^https://\n", scope: .selective, connectPorts: nil, cache: cache)
        let marker = "tls-cache-\(UUID().uuidString)"
        let url = try Servers.nginxTLS + "/fresh/small.txt?\(marker)"
        let first = try proxy.curl([url])
        let second = try proxy.curl(["-i", url])
        let records = try await proxy.finish()
        #expect(first.output == String(repeating: "x", count: 1_024))
        #expect(second.output.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(second.output.contains("\r\nAge: "))
        #expect(second.output.hasSuffix("\r\n\r\n" + String(repeating: "x", count: 1_024)))
        let gets = records.filter { $0.request.method == "GET" }
        #expect(gets.map(\.outcome.kind) == [.stored, .cached])
        #expect(gets.allSatisfy { $0.request.tunnel != nil })
        let log = try String(contentsOfFile: Servers.variable("NGINX_ACCESS_LOG"), encoding: .utf8)
        #expect(log.components(separatedBy: marker).count - 1 == 1)
    }

    @Test("a request inside an intercepted tunnel gets the server's body, and its record links to the CONNECT's")
    func allowedInsideTLS() async throws {
        let proxy = try await InterceptingProxy(rules: Self.rules)
        let url = try Servers.nginxTLS + "/small.txt"
        let run = try proxy.curl([url])
        let records = try await proxy.finish()
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output == String(repeating: "x", count: 1_024))
        #expect(records.count == 2)
        let connect = try #require(records.first { $0.request.method == "CONNECT" })
        let get = try #require(records.first { $0.request.method == "GET" })
        #expect(get.request.url == url)
        #expect(get.request.tunnel == connect.id)
        #expect(get.outcome.kind == .response)
        #expect(get.outcome.status == 200)
        #expect(get.outcome.bytes == 1_024)
        #expect(connect.request.tunnel == nil)
        #expect(connect.outcome.kind == .tunnel)
        #expect(connect.outcome.bytes == 1_024)
    }

    @Test("a path blocked on an allowed host is refused inside TLS with 403 JSON, and never reaches the server")
    func blockedPath() async throws {
        let proxy = try await InterceptingProxy(rules: Self.rules)
        let marker = "admin-\(UUID().uuidString)"
        let run = try proxy.curl(["-w", "\n%{http_code}", try Servers.nginxTLS + "/admin/\(marker)"])
        let records = try await proxy.finish()
        #expect(run.output.hasSuffix("\n403"))
        let body = try jsonObject(String(run.output.dropLast(4)))
        #expect(body["error"] as? String == "blocked")
        #expect(body["rule"] as? String == "p/admin")
        #expect(records.first { $0.request.method == "GET" }?.outcome.kind == .blocked)
        let accessLog = try String(contentsOfFile: Servers.variable("NGINX_ACCESS_LOG"), encoding: .utf8)
        #expect(!accessLog.contains(marker))
    }

    @Test("a read is allowed and a write refused on one API, by the method inside TLS")
    func readAllowedWriteRefused() async throws {
        let proxy = try await InterceptingProxy(rules: Self.rules)
        let url = try Servers.nginxTLS + "/api/small.txt"
        let read = try proxy.curl(["-o", "/dev/null", "-w", "%{http_code}", url])
        let write = try proxy.curl(["-o", "/dev/null", "-w", "%{http_code}", "-X", "POST", "-d", "x=1", url])
        let records = try await proxy.finish()
        #expect(read.output == "404")  // nginx has no /api/: the read reached it
        #expect(write.output == "403")
        let post = try #require(records.first { $0.request.method == "POST" })
        #expect(post.decision.rule == "p/writes")
        #expect(post.outcome.kind == .blocked)
    }

    @Test("a respond rule answers inside TLS with its body, and nothing is sent")
    func respondInsideTLS() async throws {
        let proxy = try await InterceptingProxy(rules: Self.rules)
        let run = try proxy.curl(["-i", try Servers.nginxTLS + "/mock/widgets"])
        let records = try await proxy.finish()
        #expect(run.output.hasPrefix("HTTP/1.1 200"), "\(run.output)\(run.errors)")
        #expect(run.output.hasSuffix("\r\n\r\n{\"mocked\":\"widgets\"}"))
        #expect(run.output.lowercased().contains("content-type: application/json"))
        #expect(records.first { $0.request.method == "GET" }?.outcome.kind == .responded)
    }

    @Test("a redirect rule sends the request inside TLS to its https target")
    func redirectInsideTLS() async throws {
        let origin = try Servers.nginxTLS
        let proxy = try await InterceptingProxy(rules: "[redirect \(origin)/small.txt] field=path\nold ^/old\\.txt$")
        let run = try proxy.curl([origin + "/old.txt"])
        let records = try await proxy.finish()
        #expect(run.output == String(repeating: "x", count: 1_024), "\(run.errors)")
        let get = try #require(records.first { $0.request.method == "GET" })
        #expect(get.decision.verdict == .redirect)
        #expect(get.outcome.forwardedURL == origin + "/small.txt")
        #expect(get.outcome.status == 200)
    }

    @Test("a warning inside TLS answers 403 with the acknowledge hint; the retry with the header proceeds")
    func warningInsideTLS() async throws {
        let proxy = try await InterceptingProxy(rules: Self.rules)
        let url = try Servers.nginxTLS + "/delete/small.txt"
        let first = try proxy.curl(["-w", "\n%{http_code}", url])
        let retry = try proxy.curl([
            "-o", "/dev/null", "-w", "%{http_code}", "-H", "Audit-Acknowledge: p/deletes", url,
        ])
        let records = try await proxy.finish()
        #expect(first.output.hasSuffix("\n403"))
        let body = try jsonObject(String(first.output.dropLast(4)))
        #expect(body["error"] as? String == "warning")
        #expect((body["acknowledge"] as? [String: String])?["value"] == "p/deletes")
        #expect(retry.output == "404")
        let gets = records.filter { $0.request.method == "GET" }
        #expect(gets.map(\.outcome.kind) == [.warningDeclined, .response])
    }

    @Test("an upgrade inside an intercepted tunnel is decided, then spliced: bytes echo both ways, each recorded once")
    func upgradeInsideTLS() async throws {
        let proxy = try await InterceptingProxy(rules: Self.rules)
        let authority = hostHeader(of: try Servers.variable("UPGRADE_TLS_URL"))
        let script = """
            import socket, ssl, sys
            host, port = sys.argv[2].rsplit(":", 1)
            raw = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
            raw.sendall(f"CONNECT {sys.argv[2]} HTTP/1.1\\r\\nHost: {sys.argv[2]}\\r\\n\\r\\n".encode())
            head = b""
            while b"\\r\\n\\r\\n" not in head:
                head += raw.recv(1)
            secure = ssl.create_default_context(cafile=sys.argv[3]).wrap_socket(raw, server_hostname=host)
            secure.sendall(f"GET /echo HTTP/1.1\\r\\nHost: {sys.argv[2]}\\r\\nUpgrade: echo\\r\\nConnection: Upgrade\\r\\n\\r\\n".encode())
            head = b""
            while b"\\r\\n\\r\\n" not in head:
                head += secure.recv(1)
            print(head.split(b"\\r\\n")[0].decode())
            secure.sendall(b"ping")
            echoed = b""
            while len(echoed) < 4:
                echoed += secure.recv(4 - len(echoed))
            print(echoed.decode())
            secure.close()
            """
        let run = try runClient(
            "python3", ["-c", script, String(proxy.proxy.server.port ?? 0), authority, proxy.caPath])
        try await Task.sleep(for: .milliseconds(200))
        let records = try await proxy.finish()
        #expect(run.output == "HTTP/1.1 101 Switching Protocols\nping\n", "\(run.errors)")
        let connect = try #require(records.first { $0.request.method == "CONNECT" })
        let upgrade = try #require(records.first { $0.request.method == "GET" })
        #expect(records.count == 2)
        #expect(upgrade.outcome.status == 101)
        #expect(upgrade.request.tunnel == connect.id)
        #expect(connect.outcome.kind == .tunnel)
    }

    @Test("a passthrough host's tunnel is spliced: the client sees the server's own certificate")
    func passthrough() async throws {
        let proxy = try await InterceptingProxy(rules: Self.rules, passthrough: ["127.0.0.1"], connectPorts: nil)
        let run = try runClient(
            "curl", ["-sS", "--cacert", try Servers.nginxCA, "-x", proxy.address, try Servers.nginxTLS + "/admin/x"])
        let records = try await proxy.finish()
        // The path rule cannot see inside: nginx answers 404 for /admin/x, over its own certificate.
        #expect(run.status == 0, "\(run.errors)")
        #expect(run.output.contains("404 Not Found"))
        #expect(records.map(\.request.method) == ["CONNECT"])
        #expect(records.first?.outcome.kind == .tunnel)
    }

    @Test("a spliced tunnel keeps the port limit; an intercepted one may go to any port")
    func portLimit() async throws {
        let proxy = try await InterceptingProxy(rules: Self.rules, passthrough: ["127.0.0.1"])
        let run = try runClient(
            "curl",
            [
                "-sS", "-o", "/dev/null", "-w", "%{http_connect}", "--cacert", try Servers.nginxCA, "-x", proxy.address,
                try Servers.nginxTLS + "/small.txt",
            ])
        let records = try await proxy.finish()
        #expect(run.output == "403")
        #expect(records.first?.outcome.kind == .blocked)
    }

    @Test("selective interception splices a tunnel no rule could decide on more than its host")
    func selectiveSplices() async throws {
        let proxy = try await InterceptingProxy(
            rules: "[block]\nrival ^https?://rival\\.test/\n[record]\nall ^https://", scope: .selective,
            connectPorts: nil)
        let tunnel = try runClient(
            "curl",
            [
                "-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert", try Servers.nginxCA, "-x", proxy.address,
                try Servers.nginxTLS + "/small.txt",
            ])
        let records = try await proxy.finish()
        // Spliced: the client trusted the server's own certificate.
        #expect(tunnel.output == "200", "\(tunnel.errors)")
        #expect(records.map(\.request.method) == ["CONNECT"])
        #expect(records.first?.outcome.kind == .tunnel)
    }

    @Test("selective interception terminates a tunnel some path rule could decide")
    func selectiveIntercepts() async throws {
        let proxy = try await InterceptingProxy(rules: Self.rules, scope: .selective)
        let run = try proxy.curl(["-o", "/dev/null", "-w", "%{http_code}", try Servers.nginxTLS + "/admin/x"])
        _ = try await proxy.finish()
        #expect(run.output == "403")
    }

    @Test(
        "a server whose certificate fails verification answers 502 naming the reason, recorded",
        arguments: [
            ("NGINX_TLS_UNTRUSTED_URL", "is self-signed"),
            ("NGINX_TLS_EXPIRED_URL", "expired on 2020-01-02T00:00:00Z"),
            ("NGINX_TLS_WRONG_HOST_URL", "is for another host"),
        ])
    func upstreamVerification(server: String, reason: String) async throws {
        let proxy = try await InterceptingProxy(rules: Self.rules)
        let run = try proxy.curl(["-w", "\n%{http_code}", try Servers.variable(server) + "/small.txt"])
        let records = try await proxy.finish()
        #expect(run.output.hasSuffix("\n502"), "\(run.output)")
        let body = try jsonObject(String(run.output.dropLast(4)))
        #expect((body["message"] as? String)?.contains(reason) == true, "\(body)")
        let get = try #require(records.first { $0.request.method == "GET" })
        #expect(get.outcome.kind == .failure)
        #expect(get.outcome.error?.description.contains(reason) == true)
    }

    @Test("a Host header that contradicts the CONNECT target is refused with 400 JSON")
    func hostContradictsConnect() async throws {
        let proxy = try await InterceptingProxy(rules: Self.rules)
        let run = try proxy.curl([
            "-w", "\n%{http_code}", "-H", "Host: other.test", try Servers.nginxTLS + "/small.txt",
        ])
        _ = try await proxy.finish()
        #expect(run.output.hasSuffix("\n400"))
        let body = try jsonObject(String(run.output.dropLast(4)))
        #expect((body["message"] as? String)?.contains("names another server than the CONNECT target") == true)
    }

    @Test("a client that sends plain HTTP into an intercepted tunnel is cut off, and the CONNECT recorded as failed")
    func notTLSInTunnel() async throws {
        let proxy = try await InterceptingProxy(rules: Self.rules)
        let authority = hostHeader(of: try Servers.nginxTLS)
        let connection = try RawConnection(port: proxy.proxy.server.port ?? 0)
        connection.send("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        let answer = connection.readSome()
        connection.send("GET /small.txt HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
        let rest = connection.readToEnd()
        let records = try await proxy.finish()
        #expect(answer.hasPrefix("HTTP/1.1 200"))
        #expect(rest.isEmpty)
        let connect = try #require(records.first)
        #expect(records.count == 1)
        #expect(connect.outcome.kind == .failure)
        #expect(connect.outcome.error?.description.contains("no TLS handshake") == true)
    }

    @Test(
        "a client that does not trust the CA fails its handshake, recorded as refusing the certificate with the hint naming audit env",
        arguments: ["curl", "python3"])
    func untrustingClient(_ client: String) async throws {
        let proxy = try await InterceptingProxy(rules: Self.rules)
        let url = try Servers.nginxTLS + "/small.txt"
        let arguments =
            client == "curl"
            ? ["-sS", "-x", proxy.address, url]
            : ["-c", "import sys, urllib.request; urllib.request.urlopen(sys.argv[1])", url]
        let run = try runClient(
            client, arguments, environment: client == "curl" ? [:] : ["HTTPS_PROXY": proxy.address])
        let records = try await proxy.finish()
        #expect(run.status != 0, "\(run.errors)")
        #expect(records.count == 1)
        let connect = try #require(records.first)
        let host = try #require(URL(string: url)?.host)
        #expect(connect.outcome.kind == .failure)
        #expect(
            connect.outcome.error?.description.hasPrefix("the client refused the proxy's certificate for \(host)")
                == true)
        #expect(
            connect.outcome.error?.description.hasSuffix(
                "it does not trust the audit CA; 'audit env --ca-dir DIR' prints the settings that make tools trust it")
                == true)
    }

    @Test("Python requests with VERIFY_X509_STRICT accepts the minted leaf and gets the server's body")
    func pythonStrict() async throws {
        let proxy = try await InterceptingProxy(rules: Self.rules)
        let script = """
            import ssl, sys, requests
            from requests.adapters import HTTPAdapter
            class Strict(HTTPAdapter):
                def init_poolmanager(self, *args, **kwargs):
                    context = ssl.create_default_context(cafile=sys.argv[2])
                    context.verify_flags |= ssl.VERIFY_X509_STRICT
                    kwargs["ssl_context"] = context
                    return super().init_poolmanager(*args, **kwargs)
                def proxy_manager_for(self, *args, **kwargs):
                    context = ssl.create_default_context(cafile=sys.argv[2])
                    context.verify_flags |= ssl.VERIFY_X509_STRICT
                    kwargs["ssl_context"] = context
                    return super().proxy_manager_for(*args, **kwargs)
            session = requests.Session()
            session.mount("https://", Strict())
            answer = session.get(sys.argv[1], proxies={"https": sys.argv[3]})
            print(answer.status_code, len(answer.content))
            """
        let run = try runClient(
            "python3", ["-c", script, try Servers.nginxTLS + "/small.txt", proxy.caPath, proxy.address])
        _ = try await proxy.finish()
        #expect(run.output == "200 1024\n", "\(run.errors)")
    }

    @Test("headless Chromium trusting the CA by its SPKI hash loads a page inside TLS; a blocked path is refused")
    func chromium() async throws {
        let authority = try CertificateAuthority.generate()
        let settings = try TLSInterceptionSettings(
            authority: authority, scope: .all, upstreamRootFiles: [Servers.nginxCA])
        let proxy = try await RunningProxy(
            rules: "[block] field=path\nadmin ^/admin\n[block]\ntracker ^https?://tracker\\.invalid(/|:|$)"
        ) { $0.tlsInterception = settings }
        let page = try Servers.nginxTLS + "/page.html"
        let profile = FileManager.default.temporaryDirectory.appendingPathComponent("chromium-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: profile) }
        func load(_ url: String) throws -> ClientRun {
            try runClient(
                "chromium",
                [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--user-data-dir=\(profile.path)",
                    "--proxy-server=\(proxy.address)", "--proxy-bypass-list=<-loopback>",
                    "--ignore-certificate-errors-spki-list=\(authority.publicKeySHA256)",
                    "--virtual-time-budget=3000", "--dump-dom", url,
                ])
        }
        let loaded = try load(page)
        let blocked = try load(try Servers.nginxTLS + "/admin/page.html")
        let records = try await proxy.finish()
        #expect(loaded.output.contains("<h1 id=\"loaded\">The page loaded</h1>"), "\(loaded.errors.suffix(2_000))")
        #expect(blocked.output.contains("\"error\":\"blocked\""), "\(blocked.output.prefix(500))")
        let urls = Set(records.filter { $0.request.method == "GET" }.map(\.request.url))
        #expect(urls.contains(page))
        #expect(try urls.contains(Servers.nginxTLS + "/pixel.svg"))
    }

    @Test("hundreds of tunnels dropped mid-handshake or sent garbage leave the proxy serving, each one recorded")
    func abusiveClients() async throws {
        let proxy = try await InterceptingProxy(rules: Self.rules)
        let authority = hostHeader(of: try Servers.nginxTLS)
        let port = proxy.proxy.server.port ?? 0
        for index in 0..<300 {
            let connection = try RawConnection(port: port)
            connection.send("CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
            if index % 3 == 0 {
                connection.send("\u{16}\u{03}\u{01}\u{02}\u{00}\u{01}")  // the start of a ClientHello, then gone
            } else if index % 3 == 1 {
                connection.send("\u{16}\u{03}\u{03}\u{00}\u{05}garbage-garbage")
            }
            connection.close()
        }
        let run = try proxy.curl(["-o", "/dev/null", "-w", "%{http_code}", try Servers.nginxTLS + "/small.txt"])
        try await Task.sleep(for: .milliseconds(300))
        let records = try await proxy.finish()
        #expect(run.output == "200")
        #expect(records.filter { $0.request.method == "CONNECT" }.count == 301)
        #expect(records.filter { $0.request.method == "GET" }.count == 1)
    }
}
