import AuditReport
import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// `audit authz --grpc-listen` asked by an Envoy-shaped client: Python grpcio with Envoy's own API
/// messages (the xds-protos package), filling CheckRequests as Envoy's ext_authz filter does.
@Suite(.serialized) struct AuthzGRPCTests {
    struct Reply: Decodable {
        let grpc: Int
        let allowed: Bool
        let status: Int
        let headers: [String: String]
        let remove: [String]
        let body: String
    }

    /// Starts `audit authz` with the gateway tests' rules plus `extra`, sends `cases` (JSON objects),
    /// and returns the replies and the records.
    private func check(_ cases: [[String: Any]], extra: String = "") throws -> ([Reply], [AuditRecord]) {
        let folder = try TemporaryFolder([:])
        let policies = folder.url.appendingPathComponent("policies")
        try FileManager.default.createDirectory(at: policies, withIntermediateDirectories: true)
        try Data((AuthzGatewayTests.rules + extra).utf8).write(to: policies.appendingPathComponent("shop.rules"))
        let authz = try ProxyProcess(
            command: "authz", arguments: ["--log", "audit.jsonl", "--grpc-listen", "127.0.0.1:0"], in: folder)
        // "… (gRPC 127.0.0.1:PORT) — …"
        let grpc = try #require(
            authz.firstLine.components(separatedBy: "(gRPC ").dropFirst().first?.split(separator: ")").first)
        let lines = try cases.map { String(decoding: try JSONSerialization.data(withJSONObject: $0), as: UTF8.self) }
        let client = try runProgram(
            URL(fileURLWithPath: "/usr/bin/env"), ["python3", try clientScript(), String(grpc)],
            input: lines.joined(separator: "\n") + "\n")
        #expect(client.exitCode == 0, "\(client.standardError)")
        #expect(authz.stop() == 0)
        let replies = try Data(client.standardOutput.utf8).split(separator: UInt8(ascii: "\n")).map {
            try JSONDecoder().decode(Reply.self, from: Data($0))
        }
        let records = try AuditLogReader.read(atPath: folder.path + "/audit.jsonl").records
        return (replies, records)
    }

    private func clientScript() throws -> String {
        let here = URL(fileURLWithPath: #filePath)
        return here.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Servers/envoy_check.py").path
    }

    @Test("a CheckRequest with every field populated as Envoy populates it is decided on its method, URL and headers")
    func everyField() throws {
        let (replies, records) = try check([
            [
                "method": "GET", "host": "shop.test", "path": "/admin/users?page=2", "scheme": "https", "full": true,
                "headers": ["user-agent": "curl/8.5.0", "x-request-id": "7f1c4e9a-3c55-4ab0-9f8e-0d6b2f1c9a11"],
            ],
            ["method": "POST", "host": "shop.test", "path": "/cart?add=7", "scheme": "https", "full": true],
        ])
        #expect(replies.map(\.allowed) == [false, true])
        #expect(replies[0].grpc == 7)  // PERMISSION_DENIED
        #expect(replies[0].status == 403)
        #expect(replies[0].headers["x-request-audit-rule"] == "shop/admin")
        #expect(replies[0].body.contains(#""error":"blocked""#))
        #expect(replies[1].grpc == 0)
        #expect(replies[1].headers["x-request-audit-verdict"] == "pass")
        #expect(records.map(\.request.url) == ["https://shop.test/admin/users?page=2", "https://shop.test/cart?add=7"])
        #expect(records.map(\.request.method) == ["GET", "POST"])
        #expect(records[0].request.gateway == "envoy-grpc")
        #expect(records[0].request.gatewayRequestID == "7f1c4e9a-3c55-4ab0-9f8e-0d6b2f1c9a11")
        #expect(records[1].request.bodyBytes == 10)
        #expect(records[0].request.headers.contains { $0.name == "user-agent" && $0.value == "curl/8.5.0" })
        #expect(!records[0].request.headers.contains { $0.name.hasPrefix(":") })
        #expect(records.map(\.outcome.kind) == [.authz, .authz])
    }

    @Test("blocked spellings of one resource are denied over gRPC as the policy decides their canonical URL")
    func spellings() throws {
        let paths = [
            "/admin", "/%61dmin", "/x/../admin", "/./admin/", "/%2e/admin", "/ok", "/adminx", "/administration",
        ]
        let (replies, records) = try check(paths.map { ["method": "GET", "host": "SHOP.test.", "path": $0] })
        #expect(replies.map(\.allowed) == [false, false, false, false, false, true, false, false])
        #expect(records.map(\.request.host) == Array(repeating: "shop.test", count: paths.count))
    }

    @Test(
        "redirect, respond and warn over gRPC: 302 with Location, the rule's response, 403 then an acknowledged retry")
    func actions() throws {
        let (replies, _) = try check(
            [
                ["method": "GET", "host": "shop.test", "path": "/old/a?b=1"],
                ["method": "GET", "host": "shop.test", "path": "/teapot"],
                ["method": "GET", "host": "shop.test", "path": "/export"],
                [
                    "method": "GET", "host": "shop.test", "path": "/export",
                    "headers": ["audit-acknowledge": "shop/export"],
                ],
            ], extra: "\n[respond 418] body=\"short and stout\"\nteapot ^https?://shop\\.test/teapot\n")
        #expect(replies[0].status == 302)
        #expect(replies[0].headers["location"] == "https://shop.test/new/a?b=1")
        #expect(replies[1].status == 418)
        #expect(replies[1].body == "short and stout")
        #expect(replies[2].status == 403)
        #expect(replies[2].body.contains(#""acknowledge":{"header":"Audit-Acknowledge","value":"shop/export"}"#))
        #expect(replies[3].allowed)
        #expect(replies[3].remove == ["audit-acknowledge"])
    }

    @Test("a malformed CheckRequest (no method, no path) is denied 400 with a clear error, and recorded")
    func malformed() throws {
        let (replies, records) = try check([
            ["method": "", "host": "shop.test", "path": "/x"],
            ["method": "GET", "host": "shop.test", "path": ""],
            ["method": "GET", "host": "", "path": "/x"],
        ])
        #expect(replies.map(\.status) == [400, 400, 400])
        #expect(replies[0].body.contains("the check names no method"))
        #expect(replies[1].body.contains("is not a path"))
        #expect(replies[2].body.contains("the check names no host"))
        #expect(records.count == 3)
        #expect(records.map(\.outcome.status) == [400, 400, 400])
    }
}

/// Stopping `audit authz` while checks flow.
@Suite(.serialized) struct AuthzStopTests {
    @Test(
        "SIGTERM while checks flow: it stops accepting, answers what is in flight, and every answered check has its record"
    )
    func drains() throws {
        let folder = try TemporaryFolder([:])
        let policies = folder.url.appendingPathComponent("policies")
        try FileManager.default.createDirectory(at: policies, withIntermediateDirectories: true)
        try Data(AuthzGatewayTests.rules.utf8).write(to: policies.appendingPathComponent("shop.rules"))
        let authz = try ProxyProcess(command: "authz", arguments: ["--log", "audit.jsonl"], in: folder)
        // Four curl loops, each asking until the listener is gone (at most 2,000 times: the log stays one file).
        let loop = """
            i=0; while [ $i -lt 2000 ] && code=$(curl -s -o /dev/null -w '%{http_code}' -H 'X-Forwarded-Method: GET' \\
              -H 'X-Forwarded-Host: shop.test' -H "X-Forwarded-Uri: /item/$i" -H 'X-Forwarded-Proto: https' \\
              http://127.0.0.1:\(authz.port)/forward-auth); do echo "$code"; i=$((i+1)); done
            """
        let clients = try (0..<4).map { _ in
            let client = Process()
            client.executableURL = URL(fileURLWithPath: "/bin/sh")
            client.arguments = ["-c", loop]
            let output = Pipe()
            client.standardOutput = output
            try client.run()
            return (client, output)
        }
        // A blocking wait: a task's sleep can be late by minutes while the parallel suite holds the pool.
        Thread.sleep(forTimeInterval: 1)
        authz.signal(SIGTERM)
        authz.process.waitUntilExit()
        var statuses: [Int] = []
        for (client, output) in clients {
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            client.waitUntilExit()
            statuses += text.split(separator: "\n").compactMap { Int($0) }
        }
        #expect(authz.process.terminationStatus == 0)
        // A check that comes once the stop began gets 503 (not decided); every other answer was decided.
        let decided = statuses.filter { $0 != 503 }
        #expect(decided.count > 5)
        #expect(Set(statuses).isSubset(of: [200, 403, 503]))
        let records = try AuditLogReader.read(atPath: folder.path + "/audit.jsonl").records
        #expect(records.count == decided.count, "\(records.count) records for \(decided.count) decided answers")
        #expect(authz.standardError.contains("audit authz: stopped after \(decided.count) checks"))
    }
}
