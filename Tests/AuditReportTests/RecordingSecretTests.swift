import AuditReport
import Foundation
import Testing

/// A recording holds nothing on which a guessed secret could be confirmed (no fingerprint key, no
/// digest of a body as sent when the body is in the file), and a replay still matches requests,
/// whatever their secrets.
@Suite struct RecordingSecretTests {
    static let login = "http://a.test/login?next=%2Fhome&token=tok_live_secret_value"

    /// A login posted as a form without a type (as Foundation and curl send one), with a Basic
    /// credential, answered "welcome".
    static func login(user: String, password: String, url: String = login) -> RecordedExchange {
        var exchange = RecordedExchange(
            started: Date(timeIntervalSince1970: 1_800_000_000), method: "POST", url: url,
            requestHeaders: [.init(name: "Authorization", value: "Basic YWRhOmh1bnRlcjI=")], requestBody: nil,
            status: 200, statusText: "OK", responseHeaders: [.init(name: "Content-Type", value: "text/plain")],
            chunks: [], waitMilliseconds: 0)
        exchange.appendRequestBody(Array("user=\(user)&password=\(password)".utf8), keepingAtMost: 1 << 20)
        exchange.appendBody(Array("welcome".utf8), at: 0, keepingAtMost: 1 << 20)
        return exchange
    }

    static func record(_ exchanges: [RecordedExchange]) throws -> String {
        let path = NSTemporaryDirectory() + "secrets-\(UUID().uuidString).har"
        let recorder = try HARRecorder(path: path)
        for exchange in exchanges { recorder.add(exchange) }
        return path
    }

    static func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    @Test("a recording names no fingerprint key, and a body it keeps has no digest of the bytes as sent")
    func noKeyNoSentDigest() throws {
        let path = try Self.record([Self.login(user: "ada", password: "hunter2")])
        let text = try String(contentsOfFile: path, encoding: .utf8)
        let request = try #require(try HARRecordingTests.entries(path).first?["request"] as? [String: Any])
        let postData = try #require(request["postData"] as? [String: Any])
        #expect(!text.contains("fingerprintKey") && !text.contains("_requestAudit"))
        #expect(
            !text.contains("hunter2") && !text.contains("tok_live_secret_value") && !text.contains("YWRhOmh1bnRlcjI"))
        #expect(request["_bodySHA256"] == nil)
        #expect((postData["text"] as? String)?.hasPrefix("user=ada&password=REDACTED-") == true)
        #expect(
            request["_redactedBodySHA256"] as? String == Self.hex(SHA256.hash(Array("user=ada&password=REDACTED".utf8)))
        )
    }

    @Test("each recorder fingerprints with a key of its own: one secret, two recordings, two fingerprints")
    func keyOfItsOwn() throws {
        let exchange = Self.login(user: "ada", password: "hunter2")
        let (first, second) = (try Self.record([exchange, exchange]), try Self.record([exchange]))
        let fingerprints = try [first, first, second].enumerated().map { index, path in
            let entry = try HARRecordingTests.entries(path)[index == 1 ? 1 : 0]
            let postData = (entry["request"] as? [String: Any])?["postData"] as? [String: Any]
            return try #require((postData?["text"] as? String)?.split(separator: "REDACTED-").last.map(String.init))
        }
        #expect(fingerprints[0] == fingerprints[1])
        #expect(fingerprints[0] != fingerprints[2])
    }

    @Test("a request matches its recording whatever the values of its secrets, in the URL and the body")
    func matchesWhateverTheSecrets() throws {
        let replay = try HARReplay(path: try Self.record([Self.login(user: "ada", password: "hunter2")]))
        let other = "http://a.test/login?next=%2Fhome&token=another_token_value"
        let response = { (url: String, body: String) in
            replay.response(method: "POST", url: url, body: Array(body.utf8))?.body
        }
        #expect(response(Self.login, "user=ada&password=hunter2") == Array("welcome".utf8))
        #expect(response(other, "user=ada&password=correct-horse") == Array("welcome".utf8))
        #expect(response(Self.login, "user=bob&password=hunter2") == nil)
        #expect(response("http://a.test/login?next=%2Fother&token=x", "user=ada&password=hunter2") == nil)
    }

    @Test("a JSON body is matched on its redacted form, its credentials' values and types left out")
    func jsonMatchedRedacted() throws {
        var exchange = RecordedExchange(
            started: Date(timeIntervalSince1970: 1_800_000_000), method: "POST", url: "http://a.test/api",
            requestHeaders: [.init(name: "Content-Type", value: "application/json")], requestBody: nil, status: 200,
            statusText: "OK", responseHeaders: [], chunks: [], waitMilliseconds: 0)
        exchange.appendRequestBody(Array(#"{"user": "ada", "pwd": 1234, "note": "hi"}"#.utf8), keepingAtMost: 1 << 20)
        exchange.appendBody(Array("ok".utf8), at: 0, keepingAtMost: 1 << 20)
        let replay = try HARReplay(path: try Self.record([exchange]))
        let response = { (body: String) in
            replay.response(method: "POST", url: "http://a.test/api", body: Array(body.utf8), type: "application/json")
        }
        #expect(response(#"{"user": "ada", "pwd": 1234, "note": "hi"}"#)?.body == Array("ok".utf8))
        #expect(response(#"{"user": "ada", "pwd": "0000", "note": "hi"}"#)?.body == Array("ok".utf8))
        #expect(response(#"{"user": "ada", "pwd": 1234, "note": "bye"}"#) == nil)
        #expect(response(#"{"user":"ada","pwd":1234,"note":"hi"}"#) == nil)
    }

    @Test("a browser's HAR, secrets as sent, matches requests carrying them or others")
    func browserHAR() throws {
        let path = try writeTemporary(
            """
            {"log": {"entries": [{"request": {"method": "POST",
              "url": "http://a.test/login?next=%2Fhome&access_token=raw_token_value_1234",
              "postData": {"mimeType": "application/json", "text": "{\\"user\\": \\"ada\\", \\"password\\": \\"p4ss\\"}"}},
              "response": {"status": 200, "content": {"text": "browser"}}}]}}
            """, name: "browser-secrets.har")
        let replay = try HARReplay(path: path)
        let body = Array(#"{"user": "ada", "password": "p4ss"}"#.utf8)
        let other = Array(#"{"user": "ada", "password": "else"}"#.utf8)
        let url = "http://a.test/login?next=%2Fhome&access_token="
        #expect(
            replay.response(method: "POST", url: url + "raw_token_value_1234", body: body, type: "application/json")?
                .body == Array("browser".utf8))
        #expect(
            replay.response(method: "POST", url: url + "another", body: other, type: "application/json")?.body
                == Array("browser".utf8))
    }

    @Test("a recording of an earlier version, with its fingerprint key and digests of bodies as sent, still replays")
    func earlierVersion() throws {
        let key = String(repeating: "ab", count: 32)
        let sent = Self.hex(SHA256.hash(Array("user=ada&password=hunter2".utf8)))
        let path = try writeTemporary(
            """
            {"log": {"version": "1.2", "_requestAudit": {"fingerprintKey": "\(key)"}, "entries": [{"request": {
              "method": "POST", "url": "http://a.test/login?token=REDACTED-0a1b2c3d", "bodySize": 25,
              "_bodySHA256": "\(sent)", "postData": {"text": "user=ada&password=REDACTED-99aa88bb"}},
              "response": {"status": 200, "content": {"text": "earlier"}}}]}}
            """, name: "earlier.har")
        let replay = try HARReplay(path: path)
        let response = replay.response(
            method: "POST", url: "http://a.test/login?token=abc", body: Array("user=ada&password=hunter2".utf8))
        #expect(response?.body == Array("earlier".utf8))
        let recorder = try HARRecorder(path: path)
        recorder.add(Self.login(user: "ada", password: "hunter2"))
        let text = try String(contentsOfFile: path, encoding: .utf8)
        #expect(!text.contains("fingerprintKey") && !text.contains(key))
        #expect(try HARRecordingTests.entries(path).count == 2)
    }

    @Test("values hidden in the request and the response's headers are hidden wherever the response body echoes them")
    func echoes() throws {
        var exchange = RecordedExchange(
            started: Date(timeIntervalSince1970: 1_800_000_000), method: "GET",
            url: "http://a.test/me?token=tok12345&password=a%2Fb%20cdef",
            requestHeaders: [
                .init(name: "Cookie", value: "session=cookie-secret-1; theme=dark"),
                .init(name: "Authorization", value: "Basic " + Data("ada:hunter22".utf8).base64EncodedString()),
            ], requestBody: nil, status: 200, statusText: "OK",
            responseHeaders: [
                .init(name: "Content-Type", value: "text/html"),
                .init(name: "Set-Cookie", value: "next=cookie-secret-2; Path=/; Domain=example.com"),
                .init(name: "X-Echo", value: "hunter22"),
            ], chunks: [], waitMilliseconds: 0)
        let page = "<p>cookie-secret-1 dark hunter22 ada:hunter22 cookie-secret-2 tok12345 a/b cdef example.com</p>"
        exchange.appendBody(Array(page.utf8), at: 0, keepingAtMost: 1 << 20)
        let path = try Self.record([exchange])
        let response = try #require(try HARRecordingTests.entries(path).first?["response"] as? [String: Any])
        let text = try #require((response["content"] as? [String: Any])?["text"] as? String)
        let echo = (response["headers"] as? [[String: Any]])?.first { $0["name"] as? String == "X-Echo" }
        let unkeyed = Redaction.withoutFingerprints(text)
        #expect(unkeyed == "<p>REDACTED dark REDACTED REDACTED REDACTED REDACTED REDACTED example.com</p>", "\(text)")
        #expect((echo?["value"] as? String)?.hasPrefix("REDACTED-") == true)
    }

    @Test(
        "fingerprints are taken out of a redacted text, whatever key made them",
        arguments: [
            ("token=REDACTED-0a1b2c3d&x=1", "token=REDACTED&x=1"),
            ("[REDACTED-ffffffff] and REDACTED-00000000", "[REDACTED] and REDACTED"),
            ("REDACTED-0a1b2c3", "REDACTED-0a1b2c3"),
            ("REDACTED-0A1B2C3D", "REDACTED-0A1B2C3D"),
            ("REDACTED-REDACTED-12345678", "REDACTED-REDACTED"),
            ("no secrets here", "no secrets here"),
        ])
    func withoutFingerprints(_ text: String, _ expected: String) {
        #expect(Redaction.withoutFingerprints(text) == expected)
        #expect(Redaction.withoutFingerprints(Array(text.utf8)) == Array(expected.utf8))
    }
}
