import AuditPolicy
import Testing

@Suite struct HostHeaderTests {
    /// A URL, the `Host` header sent with it, and whether that header names another server.
    struct Example: Sendable, CustomTestStringConvertible {
        let url: String
        let host: String
        let isContradicted: Bool
        var testDescription: String { "\(url) with Host: \(host)" }
    }

    static let examples: [Example] = [
        Example(url: "http://127.0.0.1:8080/admin", host: "blocked.example", isContradicted: true),
        Example(url: "http://127.0.0.1:8080/admin", host: "127.0.0.1:8080", isContradicted: false),
        Example(url: "http://127.0.0.1:8080/admin", host: "127.0.0.1", isContradicted: true),
        Example(url: "http://Example.COM/x", host: "example.com:80", isContradicted: false),
        Example(url: "http://example.com/x", host: "EXAMPLE.com.", isContradicted: false),
        Example(url: "https://example.com/", host: "example.com:443", isContradicted: false),
        Example(url: "https://example.com/", host: "example.com:80", isContradicted: true),
        Example(url: "http://[::1]:81/", host: "[0:0::1]:81", isContradicted: false),
        Example(url: "http://0x7f.1/", host: "127.0.0.1", isContradicted: false),
        Example(url: "http://a.test/", host: "a.test/evil", isContradicted: true),
        Example(url: "http://a.test/", host: "user@a.test", isContradicted: true),
        Example(url: "http://a.test/", host: "", isContradicted: true),
        Example(url: "http://u@a.test/", host: "u@a.test", isContradicted: true),
        Example(url: "http://a.test?q", host: "a.test", isContradicted: false),
        Example(url: "\u{FFFD}TTT://x", host: "x", isContradicted: true),
        Example(url: "https:////a.test/", host: "", isContradicted: true),
        Example(url: "https:////a.test/", host: "a.test", isContradicted: false),
        Example(url: "http://a.test\\evil/", host: "a.test\\evil", isContradicted: true),
    ]

    @Test(
        "a request whose Host header names another server than its URL is refused whatever the rules say",
        arguments: examples)
    func contradiction(_ example: Example) throws {
        let policy = try Policy(parsing: "[allow]\nall .", file: "h.rules")
        let request = AuditRequest(
            method: "GET", url: example.url, headers: [AuditRequest.Header(name: "Host", value: example.host)])
        let verdict = policy.evaluate(request)
        #expect(verdict == policy.evaluateEveryRule(request))
        #expect(verdict.action == (example.isContradicted ? .block : .allow))
        let isRefusedForHost = verdict.errors.contains {
            if case .contradictoryHost = $0.reason { $0.ruleID == "-" } else { false }
        }
        #expect(isRefusedForHost == example.isContradicted)
    }

    @Test("a request with two Host headers is refused, whatever their case")
    func twoHostHeaders() throws {
        let policy = try Policy(parsing: "[allow]\nall .", file: "h.rules")
        let request = AuditRequest(
            method: "GET", url: "http://a.test/",
            headers: [.init(name: "Host", value: "a.test"), .init(name: "host", value: "a.test")])
        #expect(request.hostHeaderContradiction == "the request has more than one Host header")
        #expect(policy.evaluate(request).action == .block)
    }

    @Test("a CONNECT is decided on its target whatever its Host header says (clients send the proxy's)")
    func connectExempt() throws {
        let policy = try Policy(parsing: "[allow]\nall .", file: "h.rules")
        let request = AuditRequest(
            method: "CONNECT", url: "https://a.test:8443/", headers: [.init(name: "Host", value: "proxy.test:3128")])
        #expect(request.hostHeaderContradiction == nil)
        #expect(policy.evaluate(request).action == .allow)
    }

    @Test("the refusal says which Host header names which other server")
    func refusalMessage() {
        let request = AuditRequest(
            method: "GET", url: "http://127.0.0.1:8080/admin", headers: [.init(name: "HOST", value: "blocked.example")])
        #expect(
            request.hostHeaderContradiction
                == "its Host header 'blocked.example' names another server than its URL (127.0.0.1:8080)")
    }
}
