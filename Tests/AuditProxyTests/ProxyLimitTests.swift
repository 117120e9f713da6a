import AuditPipeline
import AuditPolicy
import AuditProxy
import AuditReport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Requests no well-behaved client sends, limits, and stopping: never a crash or a hang.
@Suite(.serialized) struct ProxyLimitTests {
    static let rules = "[record] field=host\nlocal ^127\\.0\\.0\\.1$\n"

    @Test("a malformed request gets 400 and the connection closes; the proxy goes on serving")
    func malformedRequest() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let connection = try RawConnection(port: proxy.server.port ?? 0)
        connection.send("GET http://127.0.0.1/ HTTP/1.1\r\nHost 127.0.0.1\r\nBad Header\r\n\r\n")
        let answer = connection.readToEnd()
        let after = try runClient(
            "curl",
            ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-x", proxy.address, try Servers.nginx + "/small.txt"])
        _ = try await proxy.finish()
        #expect(answer.hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
        #expect(try jsonObject(answer)["error"] as? String == "bad-request")
        #expect(after.output == "200")
    }

    @Test("a request in origin form (not meant for a proxy) gets 400 saying what the proxy takes")
    func originFormRequest() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let connection = try RawConnection(port: proxy.server.port ?? 0)
        connection.send("GET /small.txt HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        let answer = connection.readToEnd()
        let records = try await proxy.finish()
        #expect(answer.hasPrefix("HTTP/1.1 400 Bad Request\r\n"))
        #expect((try jsonObject(answer)["message"] as? String)?.contains("absolute-form http://") == true)
        #expect(records.isEmpty)
    }

    @Test("a request head larger than the limit gets 431 and the connection closes")
    func oversizedHead() async throws {
        let proxy = try await RunningProxy(rules: Self.rules) { $0.maximumHeaderBytes = 4_096 }
        let connection = try RawConnection(port: proxy.server.port ?? 0)
        connection.send(
            "GET \(try Servers.nginx)/small.txt HTTP/1.1\r\nHost: \(hostHeader(of: try Servers.nginx))\r\nX-Big: \(String(repeating: "a", count: 8_000))\r\n\r\n"
        )
        let answer = connection.readToEnd()
        _ = try await proxy.finish()
        #expect(answer.hasPrefix("HTTP/1.1 431 Request Header Fields Too Large\r\n"), "\(answer.prefix(200))")
    }

    @Test("a request head that trickles in too slowly gets 408 and the connection closes")
    func slowHead() async throws {
        let proxy = try await RunningProxy(rules: Self.rules) { $0.headerTimeout = .milliseconds(500) }
        let connection = try RawConnection(port: proxy.server.port ?? 0)
        connection.send("GET \(try Servers.nginx)/small.txt HTTP/1.1\r\nHo")
        let answer = connection.readToEnd()
        let records = try await proxy.finish()
        #expect(answer.hasPrefix("HTTP/1.1 408 Request Timeout\r\n"), "\(answer.prefix(200))")
        #expect(try jsonObject(answer)["error"] as? String == "timeout")
        #expect(records.isEmpty)
    }

    @Test("a connection beyond the limit gets 503 and is closed; the ones within it are served")
    func connectionLimit() async throws {
        let proxy = try await RunningProxy(rules: Self.rules) { $0.maximumConnections = 2 }
        let port = proxy.server.port ?? 0
        let first = try RawConnection(port: port)
        let second = try RawConnection(port: port)
        try await Task.sleep(for: .milliseconds(200))
        let third = try RawConnection(port: port)
        let refused = third.readToEnd()
        first.send(
            "GET \(try Servers.nginx)/small.txt HTTP/1.1\r\nHost: \(hostHeader(of: try Servers.nginx))\r\nConnection: close\r\n\r\n"
        )
        let served = first.readToEnd()
        _ = second
        let records = try await proxy.finish()
        #expect(refused.hasPrefix("HTTP/1.1 503 Service Unavailable\r\n"))
        #expect(served.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(records.count == 1)
    }

    @Test("a server that cannot be reached gets the client a 502 JSON answer and a failure record")
    func unreachableServer() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let run = try runClient("curl", ["-sS", "-i", "-x", proxy.address, "http://127.0.0.1:1/nothing"])
        let records = try await proxy.finish()
        #expect(run.output.hasPrefix("HTTP/1.1 502 Bad Gateway\r\n"))
        #expect(try jsonObject(run.output)["error"] as? String == "upstream")
        #expect(try jsonObject(run.output)["message"] as? String == "cannot connect to 127.0.0.1:1: connection refused")
        #expect(records.map(\.outcome.kind) == [.failure])
        #expect(records.first?.outcome.error?.description == "cannot connect to 127.0.0.1:1: connection refused")
    }

    @Test("1,000 client connections at once are each served and recorded")
    func thousandConnections() async throws {
        var limit = rlimit()
        getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = max(limit.rlim_cur, min(limit.rlim_max, 16_384))
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
        let proxy = try await RunningProxy(rules: Self.rules)
        let port = proxy.server.port ?? 0
        let url = try Servers.nginx + "/small.txt"
        let connections = try (0..<1_000).map { _ in try RawConnection(port: port) }
        for connection in connections {
            connection.send("GET \(url) HTTP/1.1\r\nHost: \(hostHeader(of: url))\r\nConnection: close\r\n\r\n")
        }
        let answers = connections.map { $0.readToEnd() }
        let records = try await proxy.finish()
        #expect(
            answers.filter { $0.hasPrefix("HTTP/1.1 200 OK\r\n") && $0.hasSuffix(String(repeating: "x", count: 1_024)) }
                .count == 1_000)
        #expect(records.count == 1_000)
        #expect(Set(records.map(\.id)).count == 1_000)
    }

    @Test("large responses one after another on one connection to a slow reader each arrive whole")
    func slowReaderKeepAlive() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let connection = try RawConnection(port: proxy.server.port ?? 0, receiveBuffer: 16_384)
        let request =
            "GET \(try Servers.nginx)/medium.bin HTTP/1.1\r\nHost: \(hostHeader(of: try Servers.nginx))\r\n\r\n"
        var sizes: [Int] = []
        for _ in 0..<3 {
            connection.send(request)
            let response = connection.readSlowly(pause: .microseconds(200))
            #expect(response.head.hasPrefix("HTTP/1.1 200 OK"))
            sizes.append(response.bodyBytes)
        }
        connection.close()
        let records = try await proxy.finish()
        #expect(sizes == [10_000_000, 10_000_000, 10_000_000])
        #expect(records.map(\.outcome.bytes) == [10_000_000, 10_000_000, 10_000_000])
    }

    @Test("an Upgrade request is decided, and after the server's 101 both directions are spliced")
    func upgradePassThrough() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let url = try Servers.variable("UPGRADE_URL")
        let connection = try RawConnection(port: proxy.server.port ?? 0)
        connection.send(
            "GET \(url) HTTP/1.1\r\nHost: \(hostHeader(of: url))\r\nUpgrade: echo\r\nConnection: Upgrade\r\n\r\n")
        let head = connection.readSome()
        connection.send("hello through the tunnel")
        var echoed = ""
        while echoed.utf8.count < 24 {
            let more = connection.readSome()
            guard !more.isEmpty else { break }
            echoed += more
        }
        connection.close()
        let records = try await proxy.finish()
        #expect(head.hasPrefix("HTTP/1.1 101 Switching Protocols\r\n"), "\(head)")
        #expect(head.lowercased().contains("upgrade: echo"))
        #expect(echoed == "hello through the tunnel")
        #expect(records.map(\.outcome.status) == [101])
        #expect(records.first?.outcome.sentBytes == 24)
        #expect(records.first?.outcome.bytes == 24)
    }

    @Test("a graceful stop lets a request in flight finish, and its record is in the log")
    func gracefulStop() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let url = try Servers.httpbin + "/drip?duration=1&numbytes=5&delay=0"
        let address = proxy.address
        let client = Task.detached { try runClient("curl", ["-sS", "-x", address, url]) }
        try await Task.sleep(for: .milliseconds(300))
        let records = try await proxy.finish()
        let run = try await client.value
        #expect(run.output == "*****")
        #expect(records.map(\.outcome.kind) == [.response])
        #expect(records.first?.outcome.bytes == 5)
    }

    @Test("a client that goes away midway is recorded as cancelled, once")
    func clientGoesAway() async throws {
        let proxy = try await RunningProxy(rules: Self.rules)
        let connection = try RawConnection(port: proxy.server.port ?? 0)
        connection.send(
            "GET \(try Servers.httpbin)/drip?duration=3&numbytes=6&delay=0 HTTP/1.1\r\nHost: \(hostHeader(of: try Servers.httpbin))\r\n\r\n"
        )
        let head = connection.readSome()
        connection.close()
        let records = try await proxy.finish()
        #expect(head.hasPrefix("HTTP/1.1 200 OK\r\n"))
        #expect(records.map(\.outcome.kind) == [.cancelled])
    }
}
