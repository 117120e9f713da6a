import AuditReport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `audit authz` behind real gateways: nginx with `auth_request` and Caddy with `forward_auth`, each
/// in front of a local upstream, driven by curl as a client would be.
@Suite(.serialized) struct AuthzGatewayTests {
    /// The rules every gateway test decides with.
    static let rules = """
        [block] message="no admin"
        admin ^https?://shop\\.test/admin

        [warn] message="exports leave the company"
        export ^https?://shop\\.test/export

        [redirect https://shop.test/new/$1]
        old ^https?://shop\\.test/old/(.*)

        """

    @Test("nginx auth_request: an allowed path reaches the upstream with the verdict headers")
    func nginxAllows() async throws {
        let setup = try GatewaySetup(.nginx)
        defer { setup.stop() }
        let answer = try setup.get("/shop/item?id=7")
        #expect(answer.status == 200)
        #expect(answer.body == "upstream GET /shop/item?id=7 verdict=pass\n")
        let record = try #require(try setup.records().last)
        #expect(record.request.url == "http://shop.test/shop/item?id=7")
        #expect(record.request.gateway == "nginx")
        #expect(record.request.gatewayRequestID?.count == 32)  // nginx's $request_id
        #expect(record.outcome.kind == .authz)
        #expect(record.outcome.status == 200)
    }

    @Test("nginx auth_request: a blocked path, in any spelling, gets 403 with the proxy's JSON body")
    func nginxBlocks() async throws {
        let setup = try GatewaySetup(.nginx)
        defer { setup.stop() }
        for path in ["/admin", "/%61dmin/users", "/x/../admin", "/ADMIN/../admin/"] {
            let answer = try setup.get(path)
            #expect(answer.status == 403, "\(path)")
            let body = try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
            #expect(body["error"] as? String == "blocked", "\(path)")
            #expect(body["rule"] as? String == "shop/admin", "\(path)")
            #expect(answer.headers["x-request-audit-rule"] == "shop/admin", "\(path)")
        }
        #expect(try setup.upstreamHits() == 0)
        #expect(try setup.records().map(\.outcome.status) == [403, 403, 403, 403])
    }

    @Test(
        "nginx auth_request: a warning is refused with the acknowledge hint and allowed on a retry that acknowledges it"
    )
    func nginxWarning() async throws {
        let setup = try GatewaySetup(.nginx)
        defer { setup.stop() }
        let first = try setup.get("/export")
        #expect(first.status == 403)
        #expect(first.body.contains(#""acknowledge":{"header":"Audit-Acknowledge","value":"shop/export"}"#))
        let retry = try setup.get("/export", headers: ["Audit-Acknowledge: shop/export"])
        #expect(retry.status == 200)
        #expect(retry.body == "upstream GET /export verdict=warn\n")
        let records = try setup.records()
        #expect(records.map(\.warning?.decidedBy) == [.default, .acknowledged])
    }

    @Test("nginx auth_request without X-Forwarded-Host: a check whose Host names audit authz itself is refused")
    func nginxWithoutForwardedHost() async throws {
        let setup = try GatewaySetup(.nginx) {
            $0.replacingOccurrences(of: "proxy_set_header X-Forwarded-Host $host;", with: "")
        }
        defer { setup.stop() }
        let answer = try setup.get("/shop/item")
        #expect(answer.status == 403)
        let body = try #require(try JSONSerialization.jsonObject(with: Data(answer.body.utf8)) as? [String: Any])
        #expect(body["error"] as? String == "bad-request")
        #expect((body["message"] as? String)?.contains("proxy_set_header X-Forwarded-Host $host") == true, "\(body)")
        #expect(try setup.upstreamHits() == 0)
        #expect(try setup.records().map(\.outcome.status) == [400])
    }

    @Test("nginx auth_request with proxy_set_header Host $host instead of X-Forwarded-Host decides the request's host")
    func nginxHostInsteadOfForwardedHost() async throws {
        let setup = try GatewaySetup(.nginx) {
            $0.replacingOccurrences(
                of: "proxy_set_header X-Forwarded-Host $host;", with: "proxy_set_header Host $host;")
        }
        defer { setup.stop() }
        #expect(try setup.get("/admin").status == 403)
        #expect(try setup.get("/shop/item").status == 200)
        #expect(try setup.records().map(\.request.url) == ["http://shop.test/admin", "http://shop.test/shop/item"])
    }

    @Test(
        "nginx auth_request naming the request by X-Original-URL, as ingress-nginx and Authelia do: blocked in any spelling, allowed otherwise"
    )
    func nginxOriginalURL() async throws {
        // ingress-nginx's external-auth lines: the request as one absolute URL, the check's own Host left to nginx.
        let setup = try GatewaySetup(.nginx) {
            $0.replacingOccurrences(
                of: "proxy_set_header X-Original-URI $request_uri;",
                with: "proxy_set_header X-Original-URL $scheme://$http_host$request_uri;"
            )
            .replacingOccurrences(of: "proxy_set_header X-Forwarded-Proto $scheme;", with: "")
            .replacingOccurrences(of: "proxy_set_header X-Forwarded-Host $host;", with: "")
        }
        defer { setup.stop() }
        for path in ["/admin", "/%61dmin/users", "/x/../admin"] {
            #expect(try setup.get(path).status == 403, "\(path)")
        }
        #expect(try setup.get("/shop/item?id=7").body == "upstream GET /shop/item?id=7 verdict=pass\n")
        #expect(try setup.upstreamHits() == 1)
        // Recorded as decided: the canonical URL.
        #expect(
            try setup.records().map(\.request.url) == [
                "http://shop.test/admin", "http://shop.test/admin/users", "http://shop.test/admin",
                "http://shop.test/shop/item?id=7",
            ])
    }

    @Test("nginx auth_request: a request sent in absolute form is decided for its path: blocked or allowed")
    func nginxAbsoluteForm() async throws {
        let setup = try GatewaySetup(.nginx)
        defer { setup.stop() }
        let blocked = try setup.get("/", requestTarget: "http://shop.test/admin")
        #expect(blocked.status == 403)
        #expect(blocked.headers["x-request-audit-rule"] == "shop/admin")
        let allowed = try setup.get("/", requestTarget: "http://shop.test/shop/item?id=7")
        #expect(allowed.body == "upstream GET /shop/item?id=7 verdict=pass\n")
        #expect(
            try setup.records().map(\.request.url) == ["http://shop.test/admin", "http://shop.test/shop/item?id=7"])
    }

    @Test("nginx auth_request: a redirect rule answers 302 with the target, through the error_page recipe")
    func nginxRedirect() async throws {
        let setup = try GatewaySetup(.nginx)
        defer { setup.stop() }
        let answer = try setup.get("/old/a?b=1")
        #expect(answer.status == 302)
        #expect(answer.headers["location"] == "https://shop.test/new/a?b=1")
        #expect(try setup.upstreamHits() == 0)
    }

    @Test("Caddy forward_auth: allowed, blocked, warned then acknowledged, and redirected requests")
    func caddy() async throws {
        let setup = try GatewaySetup(.caddy)
        defer { setup.stop() }
        let allowed = try setup.get("/shop/item?id=7")
        #expect(allowed.status == 200)
        #expect(allowed.body == "upstream GET /shop/item?id=7 verdict=pass")
        let blocked = try setup.get("/%61dmin")
        #expect(blocked.status == 403)
        #expect(blocked.body.contains(#""error":"blocked""#))
        #expect(blocked.body.contains(#""rule":"shop/admin""#))
        #expect(try setup.get("/export").status == 403)
        let acknowledged = try setup.get("/export", headers: ["Audit-Acknowledge: shop/export"])
        #expect(acknowledged.status == 200)
        let redirected = try setup.get("/old/a")
        #expect(redirected.status == 302)
        #expect(redirected.headers["location"] == "https://shop.test/new/a")
        let records = try setup.records()
        #expect(records.map(\.request.gateway) == Array(repeating: "forward-auth", count: 5))
        #expect(records.map(\.outcome.status) == [200, 403, 403, 200, 302])
    }

    @Test(
        "a policy reloaded while requests flow through nginx: every request answered, the new rule in force, a broken file ignored"
    )
    func reloadUnderLoad() async throws {
        let setup = try GatewaySetup(.nginx, watch: true)
        defer { setup.stop() }
        let statuses = Statuses()
        let load = Task.detached {
            while !Task.isCancelled {
                statuses.add((try? setup.get("/reports/q3").status) ?? 0)
            }
        }
        try await Task.sleep(for: .milliseconds(500))
        try Data((Self.rules + "\n[block]\nreports ^https?://shop\\.test/reports\n").utf8).write(to: setup.rulesFile)
        var blocked = false
        for _ in 0..<100 where !blocked {
            try await Task.sleep(for: .milliseconds(100))
            blocked = statuses.last == 403
        }
        #expect(blocked, "the new rule is in force within 10 s")
        // A broken file: the policy in force stays.
        try Data("[blok]\nreports ^https?://shop\\.test/reports\n".utf8).write(to: setup.rulesFile)
        try await Task.sleep(for: .seconds(2))
        load.cancel()
        _ = await load.value
        #expect(try setup.get("/reports/q3").status == 403)
        let seen = statuses.all
        #expect(seen.count > 20)
        #expect(Set(seen).isSubset(of: [200, 403]), "statuses seen: \(Set(seen))")
        // Every check is one record.
        try await Task.sleep(for: .milliseconds(300))
        #expect(try setup.records().count == seen.count + 1)
        #expect(setup.authz.standardError.contains("unknown action 'blok'"))
    }
}

/// Statuses collected by a load loop.
final class Statuses: @unchecked Sendable {
    // Appended by the load task, read by the test, under the lock.
    private let lock = NSLock()
    private var values: [Int] = []
    func add(_ value: Int) { lock.withLock { values.append(value) } }
    var all: [Int] { lock.withLock { values } }
    var last: Int? { lock.withLock { values.last } }
}

/// A gateway (nginx or Caddy) in front of a local upstream, asking an `audit authz` process.
final class GatewaySetup: @unchecked Sendable {
    // Fields are set in `init` and never changed.
    enum Kind { case nginx, caddy }

    let folder: TemporaryFolder
    let authz: ProxyProcess
    /// The gateway's process group.
    private(set) var gatewayGroup: pid_t = 0
    let port: Int
    let rulesFile: URL

    /// `recipe` edits the nginx recipe's lines (``nginxRecipe(authz:upstream:)``) before use.
    init(_ kind: Kind, watch: Bool = false, recipe: (String) -> String = { $0 }) throws {
        folder = try TemporaryFolder([:])
        let policies = folder.url.appendingPathComponent("policies")
        try FileManager.default.createDirectory(at: policies, withIntermediateDirectories: true)
        rulesFile = policies.appendingPathComponent("shop.rules")
        try Data(AuthzGatewayTests.rules.utf8).write(to: rulesFile)
        authz = try ProxyProcess(
            command: "authz", arguments: ["--log", "audit.jsonl"] + (watch ? ["--watch"] : []), in: folder)
        port = try freePort()
        let upstream = try freePort()
        let command: [String]
        switch kind {
        case .nginx:
            let directory = folder.path
            let configuration = """
                worker_processes 1;
                error_log \(directory)/nginx-error.log;
                pid \(directory)/nginx.pid;
                events {}
                http {
                    access_log off;
                    client_body_temp_path \(directory)/body; proxy_temp_path \(directory)/proxy;
                    fastcgi_temp_path \(directory)/fastcgi; uwsgi_temp_path \(directory)/uwsgi;
                    scgi_temp_path \(directory)/scgi;
                    server {
                        listen 127.0.0.1:\(upstream);
                        access_log \(directory)/upstream.log;
                        location / {
                            default_type text/plain;
                            return 200 "upstream $request_method $request_uri verdict=$http_x_request_audit_verdict\\n";
                        }
                    }
                    server {
                        listen 127.0.0.1:\(port);
                        \(recipe(GatewaySetup.nginxRecipe(authz: authz.port, upstream: upstream)))
                    }
                }
                """
            try Data(configuration.utf8).write(to: folder.url.appendingPathComponent("nginx.conf"))
            command = [
                "/usr/sbin/nginx", "-p", directory, "-c", "\(directory)/nginx.conf", "-g", "daemon off;",
            ]
        case .caddy:
            let configuration = """
                {
                    admin off
                    auto_https off
                    storage file_system \(folder.path)/caddy
                    log {
                        output discard
                    }
                }
                http://:\(port) {
                    bind 127.0.0.1
                    forward_auth 127.0.0.1:\(authz.port) {
                        uri /forward-auth
                        copy_headers X-Request-Audit-Verdict X-Request-Audit-Rule
                    }
                    reverse_proxy 127.0.0.1:\(upstream)
                }
                http://:\(upstream) {
                    bind 127.0.0.1
                    log {
                        output file \(folder.path)/upstream.log
                    }
                    respond "upstream {method} {uri} verdict={header.X-Request-Audit-Verdict}"
                }
                """
            try Data(configuration.utf8).write(to: folder.url.appendingPathComponent("Caddyfile"))
            command = [
                "/usr/bin/env", "HOME=\(folder.path)", "XDG_DATA_HOME=\(folder.path)", "XDG_CONFIG_HOME=\(folder.path)",
                "/usr/bin/caddy", "run", "--config", "\(folder.path)/Caddyfile", "--adapter", "caddyfile",
            ]
        }
        gatewayGroup = try spawnInGroup(command)
        // Ready when it answers.
        for _ in 0..<100 {
            if (try? get("/ready")) != nil { return }
            Thread.sleep(forTimeInterval: 0.1)
        }
        throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "the gateway did not start"])
    }

    /// The nginx `server` lines of the README's recipe: `auth_request` to audit authz on `authz`, its
    /// denials given back by `error_page`, and the upstream told the verdict.
    static func nginxRecipe(authz: Int, upstream: Int) -> String {
        """
        location / {
            auth_request /_audit;
            auth_request_set $audit_status $upstream_http_x_request_audit_status;
            auth_request_set $audit_denial $upstream_http_x_request_audit_denial;
            auth_request_set $audit_location $upstream_http_location;
            auth_request_set $audit_rule $upstream_http_x_request_audit_rule;
            auth_request_set $audit_verdict $upstream_http_x_request_audit_verdict;
            proxy_set_header X-Request-Audit-Verdict $audit_verdict;
            proxy_set_header X-Request-Audit-Rule $audit_rule;
            error_page 403 = @audit_denied;
            proxy_pass http://127.0.0.1:\(upstream);
        }
        location = /_audit {
            internal;
            proxy_pass http://127.0.0.1:\(authz);
            proxy_pass_request_body off;
            proxy_set_header Content-Length "";
            proxy_set_header X-Original-URI $request_uri;
            proxy_set_header X-Original-Method $request_method;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header X-Forwarded-Host $host;
            proxy_set_header X-Request-ID $request_id;
        }
        location @audit_denied {
            add_header X-Request-Audit-Rule $audit_rule always;
            if ($audit_status = 302) { return 302 $audit_location; }
            default_type application/json;
            return 403 $audit_denial;
        }
        """
    }

    struct Answer {
        let status: Int
        let headers: [String: String]
        let body: String
    }

    /// GET `path` from the gateway as `Host: shop.test`, with `headers`; with `requestTarget`, the
    /// request line names that instead of the path (`GET http://shop.test/x`, absolute form).
    func get(_ path: String, headers: [String] = [], requestTarget: String? = nil) throws -> Answer {
        let target = requestTarget.map { ["--request-target", $0] } ?? []
        let (data, exitCode) = try runCurl(
            ["-sS", "--path-as-is", "-D", "-", "-H", "Host: shop.test", "--max-time", "10"] + target
                + headers.flatMap { ["-H", $0] } + ["http://127.0.0.1:\(port)\(path)"])
        guard exitCode == 0 else {
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "curl \(path) failed"])
        }
        let text = String(decoding: data, as: UTF8.self)
        let parts = text.components(separatedBy: "\r\n\r\n")
        let lines = parts[0].components(separatedBy: "\r\n")
        let status = Int(lines[0].split(separator: " ")[1]) ?? 0
        var fields: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Answer(status: status, headers: fields, body: parts.dropFirst().joined(separator: "\r\n\r\n"))
    }

    /// Requests the upstream served, from its access log.
    func upstreamHits() throws -> Int {
        let log = (try? String(contentsOf: folder.url.appendingPathComponent("upstream.log"), encoding: .utf8)) ?? ""
        return log.split(separator: "\n").filter { !$0.contains("/ready") }.count
    }

    /// The records of `audit authz`'s log, after the readiness checks.
    func records() throws -> [AuditRecord] {
        let url = folder.url.appendingPathComponent("audit.jsonl")
        // Records are written within a few milliseconds.
        Thread.sleep(forTimeInterval: 0.2)
        return try AuditLogReader.read(atPath: url.path).records.filter { !$0.request.url.hasSuffix("/ready") }
    }

    func stop() {
        kill(-gatewayGroup, SIGKILL)
        _ = authz.stop()
    }
}

/// Starts `command` in a process group of its own, with no file descriptor but the standard ones
/// (Foundation's `Process` waits for the end of every process that holds its own, which a gateway's
/// workers would), and returns the group's id.
func spawnInGroup(_ command: [String]) throws -> pid_t {
    let launcher = Process()
    launcher.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    launcher.arguments =
        [
            "python3", "-c",
            "import subprocess, sys; print(subprocess.Popen(sys.argv[1:], close_fds=True, start_new_session=True, "
                + "stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)",
        ] + command
    let output = Pipe()
    launcher.standardOutput = output
    try launcher.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    launcher.waitUntilExit()
    let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    return try #require(pid_t(text), "could not start \(command[0]): '\(text)'")
}
