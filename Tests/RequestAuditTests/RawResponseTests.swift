import Foundation
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension InterceptionTests {
    /// Responses written byte for byte by `Tests/Servers/raw_responses.py`, strict clients' refusals
    /// included: an audited caller sees exactly what a direct one sees (Foundation reads every one of
    /// them in both cases), in every caller style.
    @Suite struct RawResponses {
        /// The raw server's base URL on 127.0.0.1 (`RAW_URL`) or ::1 (`RAW6_URL`).
        static func base(ipv6: Bool = false) -> String {
            let name = ipv6 ? "RAW6_URL" : "RAW_URL"
            guard let base = ProcessInfo.processInfo.environment[name] else {
                Issue.record("\(name) is not set: run the tests with `make test` (Tests/with-httpbin.sh)")
                return "http://127.0.0.1:9"
            }
            return base
        }

        /// Each path, and what FoundationNetworking 6.3.1 gives a direct caller: the status (a delegate
        /// also gets the response before a failure), the error code, and the `X-Kind` header as read.
        static let directResults: [String: (status: Int?, errorCode: Int?, kind: String?)] = [
            "/ok": (200, nil, "plain"),
            "/bare-lf": (nil, -1, nil),
            "/no-space": (nil, -1, nil),
            "/latin1": (nil, -1, nil),
            "/no-reason": (nil, -1, nil),
            "/trailing-space": (200, nil, "spaced  "),
            "/folded": (200, nil, "one two"),
            "/repeated": (200, nil, "a, b"),
            "/short-body": (nil, -1, nil),
            "/no-length": (200, nil, nil),
            "/http10": (200, nil, nil),
            "/status-999": (999, nil, nil),
            "/garbage": (nil, URLError.unsupportedURL.rawValue, nil),
        ]

        static var paths: [String] { directResults.keys.sorted() }

        @Test(
            "a raw response reaches an audited caller as it reaches a direct one",
            arguments: paths, CallerStyle.allCases)
        func sameAsDirect(path: String, style: CallerStyle) async throws {
            let audited = try AuditedSession()
            let request = URLRequest(url: HTTPBin.url(Self.base() + path))
            let direct = await style.run(request, on: audited.direct)
            let intercepted = await style.run(request, on: audited.session)
            let records = try await audited.finish()
            let expected = try #require(Self.directResults[path])
            #expect(direct.errorCode == expected.errorCode)
            // A delegate also has the response that came before a failure.
            if expected.errorCode == nil || style != .delegate { #expect(direct.status == expected.status) }
            #expect(direct.headers["x-kind"] == expected.kind)
            #expect(intercepted == direct)
            #expect(records.count == 1)
        }

        @Test("a request to an IPv6 loopback address fails as it does directly (FoundationNetworking: bad URL)")
        func ipv6Loopback() async throws {
            let audited = try AuditedSession()
            let request = URLRequest(url: HTTPBin.url(Self.base(ipv6: true) + "/ok"))
            for style in CallerStyle.allCases {
                let direct = await style.run(request, on: audited.direct)
                let intercepted = await style.run(request, on: audited.session)
                #expect(direct.errorCode == URLError.badURL.rawValue, "\(style)")
                #expect(intercepted == direct, "\(style)")
            }
            let records = try await audited.finish()
            #expect(records.count == CallerStyle.allCases.count)
        }
    }
}
