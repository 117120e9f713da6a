import AuditPolicy
import Foundation
import Testing

@testable import AuditReport

@Suite struct CookieRedactionTests {
    let redaction = Redaction.default
    func hidden(_ value: String) -> String { "[REDACTED-\(redaction.fingerprint(value))]" }

    @Test(
        "a Cookie header keeps its cookies' names, each value hidden on its own",
        arguments: [
            ("sid=abc123; theme=dark", "sid=#abc123#; theme=#dark#"),
            ("sid=abc123;theme=dark", "sid=#abc123#;theme=#dark#"),
            ("  sid = abc123 ", "  sid=#abc123#"),
            ("sid=\"quoted value\"", "sid=#\"quoted value\"#"),
            ("empty=; x=1", "empty=; x=#1#"),
            ("lonelyvalue", "#lonelyvalue#"),
            ("a=b=c", "a=#b=c#"),
        ])
    func cookieHeader(_ value: String, _ expected: String) {
        let kept = redaction.redact(headerValue: value, name: "Cookie")
        #expect(kept == fill(expected), "\(kept)")
    }

    @Test(
        "a Set-Cookie keeps its cookie's name and its attributes, the value hidden",
        arguments: [
            ("next=s3cret-42; Path=/; HttpOnly; Secure", "next=#s3cret-42#; Path=/; HttpOnly; Secure"),
            ("id=7; Expires=Wed, 21 Oct 2026 07:28:00 GMT", "id=#7#; Expires=Wed, 21 Oct 2026 07:28:00 GMT"),
            ("plain-value-42", "#plain-value-42#"),
            (
                "a=one1; Path=/, b=two2; Expires=Wed, 21 Oct 2026 07:28:00 GMT; HttpOnly,c=3",
                "a=#one1#; Path=/, b=#two2#; Expires=Wed, 21 Oct 2026 07:28:00 GMT; HttpOnly,c=#3#"
            ),
        ])
    func setCookie(_ value: String, _ expected: String) {
        #expect(redaction.redact(headerValue: value, name: "set-cookie") == fill(expected))
    }

    @Test("cookies a response's Set-Cookie lines joined with commas (as Foundation joins them) are listed one by one")
    func joinedSetCookies() throws {
        var exchange = RecordedExchange(
            started: Date(timeIntervalSince1970: 1_800_000_000), method: "GET", url: "http://a.test/",
            requestHeaders: [], requestBody: nil, status: 200, statusText: "OK",
            responseHeaders: [
                .init(
                    name: "Set-Cookie",
                    value: "a=first-secret; Path=/, b=second-secret; Expires=Wed, 21 Oct 2026 07:28:00 GMT")
            ], chunks: [], waitMilliseconds: 0)
        exchange.appendBody([], at: 0, keepingAtMost: 1)
        let path = try RecordingSecretTests.record([exchange])
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(!text.contains("first-secret") && !text.contains("second-secret"))
        let entry = try #require(try HARRecordingTests.entries(path).first)
        let cookies = try #require((entry["response"] as? [String: Any])?["cookies"] as? [[String: Any]])
        #expect(cookies.map { $0["name"] as? String } == ["a", "b"])
        #expect(cookies.map { $0["path"] as? String } == ["/", nil])
        #expect(cookies.map { $0["expires"] as? String } == [nil, "2026-10-21T07:28:00.000Z"])
    }

    @Test("a cookie header redacted again keeps its fingerprints (a logged request replayed)")
    func idempotent() {
        let once = redaction.redact(headerValue: "sid=abc123; theme=dark", name: "Cookie")
        var otherKey = redaction
        otherKey.fingerprintKey = Array(repeating: 7, count: 32)
        #expect(otherKey.redact(headerValue: once, name: "Cookie") == once)
        let setOnce = redaction.redact(headerValue: "next=s3cret; Path=/", name: "Set-Cookie")
        #expect(otherKey.redact(headerValue: setOnce, name: "Set-Cookie") == setOnce)
    }

    @Test("cookies are kept as sent when Cookie is not a listed header")
    func unlisted() {
        var kept = redaction
        kept.headers.remove("cookie")
        #expect(kept.redact(headerValue: "theme=dark; lang=en", name: "Cookie") == "theme=dark; lang=en")
    }

    @Test("a recording lists request and response cookies as HAR's cookies, names kept and values hidden")
    func harCookies() throws {
        let started = Date(timeIntervalSince1970: 1_800_000_000)
        var exchange = RecordedExchange(
            started: started, method: "GET", url: "http://a.test/login",
            requestHeaders: [.init(name: "Cookie", value: "sid=cookie-secret-1; theme=dark")], requestBody: nil,
            status: 200, statusText: "OK",
            responseHeaders: [
                .init(name: "Set-Cookie", value: "next=cookie-secret-2; Path=/app; Domain=a.test; HttpOnly; Secure"),
                .init(name: "Set-Cookie", value: "pref=1; Expires=Wed, 21-Oct-2026 07:28:00 GMT"),
                .init(name: "Set-Cookie", value: "short=2; Max-Age=60; Expires=Wed, 21 Oct 2026 07:28:00 GMT"),
            ], chunks: [], waitMilliseconds: 0)
        exchange.appendBody(Array("ok".utf8), at: 0, keepingAtMost: 1 << 20)
        let path = try RecordingSecretTests.record([exchange])
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(!text.contains("cookie-secret-1") && !text.contains("cookie-secret-2"))
        let entry = try #require(try HARRecordingTests.entries(path).first)
        let request = try #require(entry["request"] as? [String: Any])
        let requestCookies = try #require(request["cookies"] as? [[String: Any]])
        #expect(requestCookies.map { $0["name"] as? String } == ["sid", "theme"])
        #expect(requestCookies.allSatisfy { ($0["value"] as? String)?.hasPrefix("[REDACTED-") == true })
        let response = try #require(entry["response"] as? [String: Any])
        let cookies = try #require(response["cookies"] as? [[String: Any]])
        #expect(cookies.map { $0["name"] as? String } == ["next", "pref", "short"])
        #expect(cookies[0]["path"] as? String == "/app" && cookies[0]["domain"] as? String == "a.test")
        #expect(cookies[0]["httpOnly"] as? Bool == true && cookies[0]["secure"] as? Bool == true)
        #expect(cookies[0]["expires"] == nil)
        #expect(cookies[1]["expires"] as? String == "2026-10-21T07:28:00.000Z")
        #expect(cookies[2]["expires"] as? String == AuditLogCoding.timestamp(started.addingTimeInterval(60)))
        let headers = try #require(response["headers"] as? [[String: Any]])
        #expect(
            headers.first?["value"] as? String
                == cookies[0]["value"].map { "next=\($0); Path=/app; Domain=a.test; HttpOnly; Secure" })
    }

    /// `expected` with each `#value#` replaced by the value's hidden form.
    private func fill(_ expected: String) -> String {
        let parts = expected.split(separator: "#", omittingEmptySubsequences: false)
        return parts.enumerated().map { $0.offset % 2 == 1 ? hidden(String($0.element)) : String($0.element) }
            .joined()
    }
}
