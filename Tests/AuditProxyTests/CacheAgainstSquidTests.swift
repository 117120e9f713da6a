import AuditCache
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `audit proxy`'s cache beside Squid's, the caching proxy its users compare it with: the same
/// requests for responses whose headers httpbin's `/response-headers` sets, through each, counting
/// how many reach the server. The two agree, except where RFC 9111 or RequestAudit's cache rules
/// part from Squid; each such case says why.
@Suite(.serialized) struct CacheAgainstSquidTests {
    /// A response's headers and the requests made for it, in order.
    struct Case: Sendable {
        let name: String
        let response: [Header]
        let requests: [[Header]]
        /// Why RequestAudit's cache answers from the cache where Squid goes to the server, or the
        /// reverse; nil when they agree.
        let parting: String?

        init(_ name: String, _ response: [Header], requests: [[Header]] = [[], []], parting: String? = nil) {
            self.name = name
            self.response = response
            self.requests = requests
            self.parting = parting
        }
    }

    struct Header: Sendable {
        let name: String
        let value: String
        init(_ name: String, _ value: String) {
            self.name = name
            self.value = value
        }
    }

    static func httpDate(_ offset: TimeInterval) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: Date().addingTimeInterval(offset))
    }

    static let maxAge = Header("Cache-Control", "max-age=60")
    static let english = [Header("Accept-Language", "en")]
    static let french = [Header("Accept-Language", "fr")]
    static let authorized = [Header("Authorization", "Bearer t")]
    static let onlyPrivateRulesStoreAuthorized =
        "a response to a request with Authorization is stored only under a private rule (issue 62), where "
        + "RFC 9111 §3.5 lets public, s-maxage and must-revalidate allow it"

    static let cases: [Case] = [
        Case("max-age", [maxAge]),
        Case("no-store", [Header("Cache-Control", "no-store")]),
        Case("private", [Header("Cache-Control", "private, max-age=60")]),
        Case("no-cache", [Header("Cache-Control", "no-cache")]),
        Case("s-maxage", [Header("Cache-Control", "s-maxage=60")]),
        Case("max-age=0", [Header("Cache-Control", "max-age=0")]),
        Case("Expires ahead", [Header("Expires", httpDate(60))]),
        Case("Expires past", [Header("Expires", httpDate(-60))]),
        Case("Expires invalid", [Header("Expires", "0")]),
        Case("Last-Modified a day ago", [Header("Last-Modified", httpDate(-86_400))]),
        Case("no freshness", []),
        Case("max-age and no-store", [Header("Cache-Control", "max-age=60, no-store")]),
        Case("two max-age", [maxAge, Header("Cache-Control", "max-age=0")]),
        Case("must-revalidate", [Header("Cache-Control", "must-revalidate, max-age=60")]),
        Case("immutable", [Header("Cache-Control", "immutable, max-age=60")]),
        Case("Age below max-age", [maxAge, Header("Age", "10")]),
        Case("Age past max-age", [maxAge, Header("Age", "100")]),
        Case("Vary: *", [maxAge, Header("Vary", "*")]),
        Case("Vary, same value", [maxAge, Header("Vary", "Accept-Language")], requests: [english, english]),
        Case(
            "Vary, two values alternating", [maxAge, Header("Vary", "Accept-Language")],
            requests: [english, french, english, french]),
        Case("request no-cache", [maxAge], requests: [[], [Header("Cache-Control", "no-cache")]]),
        Case("request Pragma: no-cache", [maxAge], requests: [[], [Header("Pragma", "no-cache")]]),
        Case("request max-age=0", [maxAge], requests: [[], [Header("Cache-Control", "max-age=0")]]),
        Case("request no-store", [maxAge], requests: [[Header("Cache-Control", "no-store")], []]),
        Case(
            "request max-stale", [Header("Cache-Control", "max-age=0")],
            requests: [[], [Header("Cache-Control", "max-stale=100")]]),
        Case("Authorization", [maxAge], requests: [authorized, authorized]),
        Case(
            "Authorization, public", [Header("Cache-Control", "public, max-age=60")],
            requests: [authorized, authorized], parting: onlyPrivateRulesStoreAuthorized),
        Case(
            "Authorization, s-maxage", [Header("Cache-Control", "s-maxage=60")], requests: [authorized, authorized],
            parting: onlyPrivateRulesStoreAuthorized),
        Case(
            "Set-Cookie", [maxAge, Header("Set-Cookie", "a=b")],
            parting: "a response that sets a cookie is stored only under a private rule (docs/cache.md)"),
        Case(
            "MAX-AGE", [Header("Cache-Control", "MAX-AGE=60")],
            parting: "RFC 9111 §5.2: directive names are compared case-insensitively"),
        Case(
            "quoted max-age", [Header("Cache-Control", "max-age=\"60\"")],
            parting: "RFC 9111 §5.2: recipients accept the quoted form of an argument"),
        Case(
            "max-age too large", [Header("Cache-Control", "max-age=99999999999999999999")],
            parting: "RFC 9111 §1.2.2: a delta-seconds too large is the largest value the cache can represent"),
        Case("Pragma: no-cache in a response", [Header("Pragma", "no-cache"), Header("Expires", httpDate(60))]),
    ]

    struct SquidDidNotStart: Error {
        let port: Int
    }

    /// Squid in the foreground on a free loopback port, keeping responses in memory, with the
    /// heuristic freshness RequestAudit uses (a tenth of the time since Last-Modified, at most a day).
    final class RunningSquid {
        let process = Process()
        let port: Int

        init() throws {
            port = try freeLoopbackPort()
            let folder = NSTemporaryDirectory() + "squid-" + UUID().uuidString
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let configuration = """
                http_port 127.0.0.1:\(port)
                http_access allow all
                cache_mem 16 MB
                access_log none
                cache_log /dev/null
                pid_filename none
                coredump_dir none
                refresh_pattern . 0 10% 1440
                shutdown_lifetime 0 seconds
                """
            try Data(configuration.utf8).write(to: URL(fileURLWithPath: folder + "/squid.conf"))
            process.executableURL = URL(fileURLWithPath: "/usr/sbin/squid")
            process.arguments = ["-N", "-f", folder + "/squid.conf"]
            process.standardOutput = FileHandle.nullDevice
            process.standardError = FileHandle.nullDevice
            try process.run()
            for _ in 0..<100 {
                let probe = try runClient("curl", ["-s", "-o", "/dev/null", "http://127.0.0.1:\(port)/"])
                if probe.status == 0 { return }
                Thread.sleep(forTimeInterval: 0.1)
            }
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw SquidDidNotStart(port: port)
        }

        var address: String { "http://127.0.0.1:\(port)" }

        deinit {
            // Squid run as root leaves SIGTERM to its shutdown, which does not end a -N process.
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// What `requests` for a response with `response`'s headers got through `proxy` (their statuses)
    /// and how many of them reached httpbin.
    static func exchange(through proxy: String, response: [Header], requests: [[Header]]) throws -> (
        statuses: [String], serverRequests: Int
    ) {
        // Letters and digits only: Squid passes the query on as it came, percent-encoded.
        let marker = "squid" + UUID().uuidString.filter { $0 != "-" }
        let query = (response + [Header("m", marker)]).map { header in
            header.name + "=" + (header.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")
        }
        let url = try Servers.httpbin + "/response-headers?" + query.joined(separator: "&")
        let statuses = try requests.map { headers in
            let arguments = ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-x", proxy, url]
            return try runClient("curl", arguments + headers.flatMap { ["-H", "\($0.name): \($0.value)"] }).output
        }
        Thread.sleep(forTimeInterval: 0.1)  // gunicorn logs a request once it has answered it
        return (statuses, try ProxyCacheTests.httpbinRequests(marker))
    }

    @Test("audit proxy's cache asks the server when Squid's does, except where the RFC or a rule parts them")
    func againstSquid() async throws {
        let squid = try RunningSquid()
        let (proxy, _) = try await ProxyCacheTests.proxy(rules: ProxyCacheTests.everything)
        for example in Self.cases {
            let bySquid = try Self.exchange(
                through: squid.address, response: example.response, requests: example.requests)
            let byProxy = try Self.exchange(
                through: proxy.address, response: example.response, requests: example.requests)
            #expect(bySquid.statuses == byProxy.statuses, "\(example.name)")
            let counts = "Squid sent \(bySquid.serverRequests), audit proxy \(byProxy.serverRequests)"
            if let parting = example.parting {
                #expect(
                    byProxy.serverRequests != bySquid.serverRequests,
                    "\(example.name): \(counts); expected to part (\(parting))")
            } else {
                #expect(byProxy.serverRequests == bySquid.serverRequests, "\(example.name): \(counts)")
            }
        }
        _ = try await proxy.finish()
    }
}
