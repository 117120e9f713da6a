import AuditPolicy
import AuditReport
import Foundation
import Testing

/// Tokens of one known format, freshly generated for each run.
struct TokenFormat: Sendable, CustomTestStringConvertible {
    let name: String
    let make: @Sendable () -> String
    var testDescription: String { name }

    static func random(_ count: Int, from alphabet: String) -> String {
        let characters = Array(alphabet)
        return String((0..<count).map { _ in characters[Int.random(in: 0..<characters.count)] })
    }

    static let alphanumeric = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
    static let base64URL = alphanumeric + "-_"

    static func base64URL(_ text: String) -> String {
        Data(text.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
            .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    static let all: [TokenFormat] = [
        TokenFormat(name: "JWT") {
            base64URL(#"{"alg":"HS256","typ":"JWT"}"#) + "."
                + base64URL(#"{"sub":"\#(random(8, from: alphanumeric))","iat":1700000000}"#) + "."
                + random(43, from: base64URL)
        },
        TokenFormat(name: "OpenAI project key") { "sk-proj-" + random(48, from: base64URL) },
        TokenFormat(name: "Anthropic key") { "sk-ant-api03-" + random(80, from: base64URL) },
        TokenFormat(name: "GitHub token") { "ghp_" + random(36, from: alphanumeric) },
        TokenFormat(name: "GitHub fine-grained token") { "github_pat_" + random(82, from: alphanumeric + "_") },
        TokenFormat(name: "GitLab token") { "glpat-" + random(20, from: base64URL) },
        TokenFormat(name: "Slack bot token") {
            "xoxb-" + random(12, from: "0123456789") + "-" + random(13, from: "0123456789") + "-"
                + random(24, from: alphanumeric)
        },
        TokenFormat(name: "AWS access key id") { "AKIA" + random(16, from: "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567") },
        TokenFormat(name: "Google API key") { "AIza" + random(35, from: base64URL) },
        TokenFormat(name: "Google OAuth access token") { "ya29." + random(60, from: base64URL) },
        TokenFormat(name: "Stripe secret key") { "sk_live_" + random(24, from: alphanumeric) },
        TokenFormat(name: "Hugging Face token") { "hf_" + random(34, from: alphanumeric) },
        TokenFormat(name: "npm token") { "npm_" + random(36, from: alphanumeric) },
        TokenFormat(name: "SendGrid key") { "SG." + random(22, from: base64URL) + "." + random(43, from: base64URL) },
        TokenFormat(name: "Shopify token") { "shpat_" + random(32, from: "0123456789abcdef") },
    ]
}

/// Where a token can sit in a request.
enum Position: String, CaseIterable, Sendable {
    case pathSegment, queryValue, fragment, fragmentParameter, userInfo, headerValue, headerText
}

@Suite struct SecretShapeTests {
    let redaction: Redaction = {
        var redaction = Redaction.default
        redaction.fingerprintKey = Array("test key".utf8)
        return redaction
    }()

    /// What `token` becomes in `position` after redaction: the text that is kept.
    func redacted(_ token: String, at position: Position) -> String {
        switch position {
        case .pathSegment: redaction.redact(url: "https://api.example.com/v1/\(token)/items")
        case .queryValue: redaction.redact(url: "https://api.example.com/v1/items?page=2&q=\(token)")
        case .fragment: redaction.redact(url: "https://app.example.com/#\(token)")
        case .fragmentParameter: redaction.redact(url: "https://app.example.com/cb#state=1&data=\(token)")
        case .userInfo: redaction.redact(url: "https://\(token)@git.example.com/repo.git")
        case .headerValue: redaction.redact(headerValue: token, name: "X-Data")
        case .headerText: redaction.redact(headerValue: "client=cli; credential \(token); v=2", name: "X-Client-Info")
        }
    }

    @Test(
        "a token of every known format is hidden in every position, leaving its fingerprint",
        arguments: TokenFormat.all, Position.allCases)
    func everyFormatEveryPosition(_ format: TokenFormat, _ position: Position) {
        let token = format.make()
        let kept = redacted(token, at: position)
        #expect(!kept.contains(token), "\(format.name) leaked at \(position): \(kept)")
        #expect(kept.contains("REDACTED-\(redaction.fingerprint(token))"), "\(kept)")
    }

    @Test(
        "a request redacted again, under another key, keeps the fingerprints it was redacted with",
        arguments: TokenFormat.all, Position.allCases)
    func redactionIsIdempotent(_ format: TokenFormat, _ position: Position) {
        let once = redacted(format.make(), at: position)
        var other = redaction
        other.fingerprintKey = Array("another run's key".utf8)
        let twice =
            position == .headerValue || position == .headerText
            ? other.redact(headerValue: once, name: position == .headerValue ? "X-Data" : "X-Client-Info")
            : other.redact(url: once)
        #expect(twice == once)
        #expect(
            other.redact(
                headers: redaction.redact(headers: [RequestSnapshot.Header(name: "Authorization", value: once)]))
                == redaction.redact(headers: [RequestSnapshot.Header(name: "Authorization", value: once)]))
    }

    static let namedSecrets: [(String, String, String)] = [
        // (what, URL, the secret that must go)
        (
            "Slack webhook", "https://hooks.slack.com/services/T024BE7LD/B01ABCDEF12/aB3dE5fG7hI9jK1lM3nO5pQ7",
            "aB3dE5fG7hI9jK1lM3nO5pQ7"
        ),
        (
            "Discord webhook",
            "https://discord.com/api/webhooks/1187654321098765432/Xy9_zW8vU7tS6rQ5pO4nM3lK2jI1hG0fE9dC8bA7-zY6xW5vU4tS3rQ2",
            "Xy9_zW8vU7tS6rQ5pO4nM3lK2jI1hG0fE9dC8bA7-zY6xW5vU4tS3rQ2"
        ),
        (
            "Telegram bot", "https://api.telegram.org/bot7123456789:AAHk3x9Qw2Er4Ty6Ui8Op0As2Df4Gh6Jk8L/sendMessage",
            "bot7123456789:AAHk3x9Qw2Er4Ty6Ui8Op0As2Df4Gh6Jk8L"
        ),
        (
            "Teams webhook",
            "https://contoso.webhook.office.com/webhookb2/3f2b1c4d-aaaa-bbbb-cccc-1234567890ab/IncomingWebhook/9Kd2mX7pQ4rT1vW8yZ3bN6cF0hJ5gL2s",
            "9Kd2mX7pQ4rT1vW8yZ3bN6cF0hJ5gL2s"
        ),
        (
            "S3 presigned URL signature",
            "https://bucket.s3.amazonaws.com/k.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20261124%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
            "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
        ),
        (
            "S3 presigned URL credential",
            "https://bucket.s3.amazonaws.com/k.pdf?X-Amz-Credential=AKIDEXAMPLE%2F20261124%2Fus-east-1%2Fs3%2Faws4_request",
            "AKIDEXAMPLE%2F20261124"
        ),
        (
            "S3 session token", "https://bucket.s3.amazonaws.com/k?X-Amz-Security-Token=IQoJb3JpZ2luX2VjEJr%2F%2F",
            "IQoJb3JpZ2luX2VjEJr"
        ),
        (
            "GCS signed URL", "https://storage.googleapis.com/b/o?X-Goog-Signature=a1b2c3d4e5f60718293a4b5c6d7e8f90",
            "a1b2c3d4e5f60718293a4b5c6d7e8f90"
        ),
        (
            "Azure SAS",
            "https://acct.blob.core.windows.net/c/b?sv=2022-11-02&sig=Zm9vYmFyYmF6cXV4%2B0123456789abcdef%3D",
            "Zm9vYmFyYmF6cXV4"
        ),
        (
            "OAuth code with state", "https://app.example.com/auth/done?code=4%2F0AbCdEfGhIjKl&state=xyz",
            "4%2F0AbCdEfGhIjKl"
        ),
        (
            "OAuth code on a callback", "https://app.example.com/oauth/callback?code=SplxlOBeZQQYbYS6WxSbIA",
            "SplxlOBeZQQYbYS6WxSbIA"
        ),
        (
            "implicit-flow fragment",
            "https://app.example.com/cb#access_token=2YotnFZFEjr1zCsicMWpAA&token_type=bearer&expires_in=3600",
            "2YotnFZFEjr1zCsicMWpAA"
        ),
        (
            "session id in the query", "https://shop.example.com/cart?PHPSESSID=9f1c2e3d4b5a69788796a5b4c3d2e1f0",
            "9f1c2e3d4b5a6978"
        ),
        (
            "session id as a path parameter", "https://shop.example.com/cart;jsessionid=0A1B2C3D4E5F6A7B8C9D",
            "0A1B2C3D4E5F6A7B8C9D"
        ),
        (
            "random value of a credential-like name",
            "https://api.example.com/v1/x?customer_token_value=Qm9vZ2llV29vZ2llMTIzNDU2Nzg5",
            "Qm9vZ2llV29vZ2llMTIzNDU2Nzg5"
        ),
        ("user info token alone", "https://ghp_abc@github.example.com/org/repo", "ghp_abc"),
        (
            "webhook marker in capitals", "https://chat.example.com/HOOKS/aB3dE5fG7hI9jK1lM3nO5pQ7xY",
            "aB3dE5fG7hI9jK1lM3nO5pQ7xY"
        ),
        (
            "webhook marker in mixed case", "https://chat.example.com/api/WebHookB2/team/Zq8wX2cV4bN6mL1kJ3hG5fD7sA",
            "Zq8wX2cV4bN6mL1kJ3hG5fD7sA"
        ),
    ]

    @Test(
        "secrets known by their place are hidden: webhook and bot paths, signatures, codes, sessions",
        arguments: namedSecrets)
    func namedPlaces(_ what: String, _ url: String, _ secret: String) {
        let kept = redaction.redact(url: url)
        #expect(!kept.contains(secret), "\(what): \(kept)")
        #expect(kept.contains("REDACTED-"), "\(what): \(kept)")
    }

    static let providerHeaders = [
        "Authorization", "Proxy-Authorization", "Cookie", "Set-Cookie", "X-Api-Key", "Api-Key", "X-Goog-Api-Key",
        "Private-Token", "X-Shopify-Access-Token", "DD-API-KEY", "Ocp-Apim-Subscription-Key", "X-Functions-Key",
        "X-RapidAPI-Key", "X-Vault-Token", "X-Auth-Token", "X-Hub-Signature-256",
    ]

    @Test("provider authentication headers are hidden whatever their value", arguments: providerHeaders)
    func providerHeader(_ name: String) {
        let kept = redaction.redact(headers: [RequestSnapshot.Header(name: name, value: "plain-value-42")])
        #expect(kept.map(\.value) == ["[REDACTED-\(redaction.fingerprint("plain-value-42"))]"])
    }

    @Test("a Bearer credential is hidden in any header, its scheme kept")
    func bearerAnywhere() {
        #expect(
            redaction.redact(headerValue: "Bearer abc.def", name: "X-Upstream-Auth")
                == "Bearer [REDACTED-\(redaction.fingerprint("abc.def"))]")
        #expect(
            redaction.redact(headerValue: "Basic dXNlcjpwYXNz", name: "Authorization")
                == "Basic [REDACTED-\(redaction.fingerprint("dXNlcjpwYXNz"))]")
    }

    static let ordinary = [
        "https://cdn.example.com/assets/app.4f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d.js",
        "https://example.com/img/3fa85f64-5717-4562-b3fc-2c963f66afa6.png?v=1700000000123",
        "https://ads.example.com/track?sid=6779504&pid=2247&cb=832580557",
        "https://example.com/services/f6451603-4dff-4ca1-9c10-122741d17432/99ff2631-1514-4e33-b441-91f9cda3fbf1",
        "https://example.com/js/services/jquery.bxslider.min.1439560077.js",
        "https://example.com/search?q=how+to+rotate+an+api+key&key=homepage:index",
        "https://git.example.com/commit/9fceb02d0ae598e95dc970b74767f19372d61af8",
        "https://example.com/login?code=US&lang=en",
        "https://example.com/articles?authors=ann,bob&page=3",
        "https://www.youtube.com/watch?v=dQw4w9WgXcQ&t=42s",
    ]

    @Test("ordinary ids, hashes, cache-busters and words are kept as they are", arguments: ordinary)
    func ordinaryURLs(_ url: String) {
        #expect(redaction.redact(url: url) == url)
    }

    @Test("one secret gets one fingerprint across records, and another key gives another")
    func fingerprints() {
        let token = TokenFormat.all[3].make()
        let first = redaction.redact(url: "https://a.example.com/?q=\(token)")
        let second = redaction.redact(headerValue: token, name: "X-Other")
        #expect(first.hasSuffix("q=REDACTED-\(redaction.fingerprint(token))"))
        #expect(second == "REDACTED-\(redaction.fingerprint(token))")
        var other = redaction
        other.fingerprintKey = Array("another key".utf8)
        #expect(other.fingerprint(token) != redaction.fingerprint(token))
        #expect(redaction.fingerprint(token).wholeMatch(of: /[0-9a-f]{8}/) != nil)
    }

    @Test("detectors and names are configurable: a shape removed is kept, a name added is hidden")
    func configurable() {
        let token = "ghp_" + String(repeating: "a1", count: 18)
        var without = redaction
        without.shapes.remove(.providerKey)
        #expect(without.redact(url: "https://x.example.com/\(token)") == "https://x.example.com/\(token)")
        var more = redaction
        more.queryParameters.insert("ticket")
        #expect(
            more.redact(url: "https://x.example.com/?ticket=7")
                == "https://x.example.com/?ticket=REDACTED-\(more.fingerprint("7"))")
        more.headers.insert("x-internal")
        #expect(more.redact(headerValue: "v", name: "X-Internal") == "[REDACTED-\(more.fingerprint("v"))]")
    }

    @Test("error descriptions lose the secrets of the URLs they quote")
    func errorText() {
        let token = TokenFormat.all[1].make()
        let text = redaction.redact(text: "could not connect to https://api.example.com/v1/\(token)/run (timed out)")
        #expect(!text.contains(token))
        #expect(text.hasSuffix("/run (timed out)"))
    }
}

/// The false-positive figure: how many ordinary URLs redaction changes.
@Suite struct RedactionFalsePositiveTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let benchmarkURLs = repository.deletingLastPathComponent().appendingPathComponent(
        "shared/bench-data/urls-bench.txt")

    @Test("of the bundled sample traffic, only the URL that carries a password changes")
    func bundledTraffic() throws {
        let entries = try ["browsing-session.har", "requests.txt"].flatMap { name in
            try TrafficReader.read(path: Self.repository.appendingPathComponent("policies/traffic/\(name)").path)
                .entries
        }
        let changed = Set(entries.map(\.request.url).filter { Redaction.default.redact(url: $0) != $0 })
        #expect(entries.count == 104)
        #expect(changed == ["http://intranet.example.com/login?user=ann&password=hunter2"])
    }

    @Test(
        "of the 114,094 benchmark URLs, fewer than 1 % change (847 when measured)",
        .enabled(if: FileManager.default.fileExists(atPath: benchmarkURLs.path), "needs ../shared/bench-data"))
    func benchmarkCorpus() throws {
        let urls = try String(contentsOf: Self.benchmarkURLs, encoding: .utf8).split(separator: "\n").map(String.init)
        let changed = urls.filter { Redaction.default.redact(url: $0) != $0 }
        #expect(urls.count == 114_094)
        #expect(changed.count < urls.count / 100, "\(changed.count) of \(urls.count) URLs change")
    }
}
