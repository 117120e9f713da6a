import AuditPipeline
import AuditPolicy
import AuditProxy
import AuditReport
import Foundation
import Testing

/// `audit proxy --record FILE.har`: a real session recorded as HAR 1.2, read back by Python's json
/// and by `audit replay`'s reader.
@Suite(.serialized) struct ProxyRecordingTests {
    static func proxy() async throws -> (RunningProxy, String) {
        let path = NSTemporaryDirectory() + "recording-\(UUID().uuidString).har"
        let recorder = try HARRecorder(path: path)
        let proxy = try await RunningProxy(rules: "[record]\nall .\n") { $0.recorder = recorder }
        return (proxy, path)
    }

    /// The recording as Python's json module reads it, or the error it prints.
    static func python(_ script: String, har: String) throws -> String {
        let run = try runClient(
            "python3", ["-c", "import json, sys\nhar = json.load(open(sys.argv[1]))\n" + script, har])
        #expect(run.status == 0, "\(run.errors)")
        return run.output
    }

    @Test("a session through the proxy is a HAR 1.2 file, one entry per exchange, bodies and statuses as served")
    func session() async throws {
        let (proxy, har) = try await Self.proxy()
        let page = try runClient("curl", ["-sS", "-x", proxy.address, try Servers.nginx + "/page.html"])
        _ = try runClient(
            "curl",
            [
                "-sS", "-x", proxy.address, "-H", "Content-Type: application/json", "--data", #"{"user":"ann"}"#,
                try Servers.httpbin + "/post",
            ])
        _ = try runClient("curl", ["-sS", "-x", proxy.address, try Servers.httpbin + "/status/404"])
        _ = try await proxy.finish()
        let summary = try Self.python(
            """
            log = har["log"]
            print(log["version"], log["creator"]["name"], len(log["entries"]))
            for entry in log["entries"]:
                print(entry["request"]["method"], entry["response"]["status"], entry["response"]["content"]["size"])
            print(json.loads(log["entries"][1]["request"]["postData"]["text"])["user"])
            """, har: har)
        let lines = summary.split(separator: "\n").map(String.init)
        #expect(lines.first == "1.2 RequestAudit 3")
        #expect(lines.dropFirst().first == "GET 200 219")
        #expect(lines.dropFirst(2).first?.hasPrefix("POST 200 ") == true)
        #expect(lines.dropFirst(3).first == "GET 404 0")
        #expect(lines.dropFirst(4).first == "ann")
        let body = try Self.python("print(har['log']['entries'][0]['response']['content']['text'], end='')", har: har)
        #expect(body == page.output)
        let (entries, problems) = try TrafficReader.read(path: har)
        #expect(problems.isEmpty)
        #expect(entries.map(\.request.method) == ["GET", "POST", "GET"])
    }

    /// mitmproxy's `mitmdump`, in the virtual environment `make test-deps` makes.
    static let mitmdump = "/opt/request-audit/mitmproxy/bin/mitmdump"

    @Test("the recording opens in mitmproxy: each flow's method, URL, status and body as the client got them")
    func opensInMitmproxy() async throws {
        let (proxy, har) = try await Self.proxy()
        let httpbin = try Servers.httpbin
        let requests: [(arguments: [String], method: String, url: String)] = [
            ([], "GET", try Servers.nginx + "/page.html"),
            (["--compressed"], "GET", httpbin + "/gzip"),
            ([], "GET", httpbin + "/image/png"),
            ([], "GET", httpbin + "/stream/5"),
            ([], "GET", httpbin + "/status/404"),
            (["-H", "Content-Type: application/json", "--data", #"{"user":"ann"}"#], "POST", httpbin + "/post"),
            ([], "GET", httpbin + "/redirect-to?url=/get"),
        ]
        var expected: [String] = []
        for (arguments, method, url) in requests {
            let file = NSTemporaryDirectory() + "body-\(UUID().uuidString)"
            let run = try runClient(
                "curl", ["-sS", "-x", proxy.address, "-o", file, "-w", "%{http_code}"] + arguments + [url])
            let digest = try runClient("sha256sum", [file]).output.prefix(64)
            expected.append("\(method) \(url) \(run.output) \(digest)")
        }
        _ = try await proxy.finish()
        let addon = NSTemporaryDirectory() + "flows-\(UUID().uuidString).py"
        try """
        import hashlib
        def response(flow):
            body = flow.response.content or b""
            print(flow.request.method, flow.request.pretty_url, flow.response.status_code,
                  hashlib.sha256(body).hexdigest(), flush=True)
        """.write(toFile: addon, atomically: true, encoding: .utf8)
        let read = try runClient(Self.mitmdump, ["-q", "-n", "-r", har, "-s", addon])
        #expect(read.status == 0, "\(read.errors)")
        #expect(read.output.split(separator: "\n").map(String.init) == expected)
    }

    @Test("secrets never reach the file: headers, URL parameters and JSON credential fields are redacted")
    func secrets() async throws {
        let (proxy, har) = try await Self.proxy()
        let secrets = ["hunter2-\(UUID().uuidString)", "sk-live-\(UUID().uuidString)", "tok-\(UUID().uuidString)"]
        _ = try runClient(
            "curl",
            [
                "-sS", "-x", proxy.address, "-H", "Authorization: Bearer \(secrets[1])", "-H",
                "Content-Type: application/json", "--data",
                #"{"user":"ann","password":"\#(secrets[0])","nested":{"api_key":"\#(secrets[1])"}}"#,
                try Servers.httpbin + "/post?access_token=\(secrets[2])",
            ])
        _ = try await proxy.finish()
        let text = try String(contentsOfFile: har, encoding: .utf8)
        for secret in secrets { #expect(!text.contains(secret), "\(secret) is in the recording") }
        // httpbin echoes the request: the response body's JSON is redacted as well.
        #expect(text.contains("REDACTED-"))
        let user = try Self.python(
            "print(json.loads(har['log']['entries'][0]['request']['postData']['text'])['user'])", har: har)
        #expect(user == "ann\n")
    }

    @Test("a login form's password never reaches the file: a form body is redacted as a URL's query is")
    func formSecrets() async throws {
        let (proxy, har) = try await Self.proxy()
        let secret = "hunter2-\(UUID().uuidString)"
        _ = try runClient(
            "curl",
            ["-sS", "-x", proxy.address, "--data", "user=ann&password=\(secret)", try Servers.httpbin + "/post"])
        _ = try await proxy.finish()
        #expect(!(try String(contentsOfFile: har, encoding: .utf8)).contains(secret))
        let sent = try Self.python("print(har['log']['entries'][0]['request']['postData']['text'])", har: har)
        #expect(sent.hasPrefix("user=ann&password=REDACTED-"), "\(sent)")
    }

    @Test("a secret a server echoes never reaches the file: cookies, a Basic password, a cookie it set, in any body")
    func echoedSecrets() async throws {
        let (proxy, har) = try await Self.proxy()
        let secrets = (0..<3).map { _ in "s3cret-\(UUID().uuidString.prefix(8))" }
        let httpbin = try Servers.httpbin
        for arguments in [
            ["-b", "session=\(secrets[0]); theme=dark", httpbin + "/cookies"],
            ["-u", "ada:\(secrets[1])", httpbin + "/basic-auth/ada/other"],
            ["-u", "ada:\(secrets[1])", httpbin + "/anything"],
            [httpbin + "/response-headers?Set-Cookie=auth%3D\(secrets[2])%3B%20Path%3D%2F"],
        ] {
            _ = try runClient("curl", ["-sS", "-o", "/dev/null", "-x", proxy.address] + arguments)
        }
        _ = try await proxy.finish()
        let bodies = try Self.python(
            "for e in har['log']['entries']: print(e['response']['content']['text'].replace('\\n', ' '))", har: har)
        // The response-headers echo's URL names the cookie it sets: a URL keeps what no rule names.
        #expect(!bodies.contains(secrets[0]) && !bodies.contains(secrets[1]) && !bodies.contains(secrets[2]))
        #expect(bodies.contains("\"theme\": \"dark\""), "\(bodies)")
        #expect(bodies.components(separatedBy: "REDACTED-").count - 1 >= 3, "\(bodies)")
        let text = try String(contentsOfFile: har, encoding: .utf8)
        #expect(!text.contains(secrets[0]) && !text.contains(secrets[1]))
    }

    @Test("a JSON body sent with a form's type (curl --data without a Content-Type) is redacted as JSON")
    func jsonSentAsForm() async throws {
        let (proxy, har) = try await Self.proxy()
        let secret = "hunter2-\(UUID().uuidString)"
        _ = try runClient(
            "curl",
            ["-sS", "-x", proxy.address, "--data", #"{"password":"\#(secret)"}"#, try Servers.httpbin + "/post"])
        _ = try await proxy.finish()
        #expect(!(try String(contentsOfFile: har, encoding: .utf8)).contains(secret))
        let sent = try Self.python(
            "d = har['log']['entries'][0]['request']['postData']; print(d['mimeType'], d['text'])", har: har)
        #expect(sent.hasPrefix(#"application/x-www-form-urlencoded {"password":"REDACTED-"#), "\(sent)")
    }

    @Test("a multipart form's secret field never reaches the file, not even inside a base64 body with a binary file")
    func multipartSecrets() async throws {
        let (proxy, har) = try await Self.proxy()
        let secret = "hunter2-\(UUID().uuidString)"
        let file = NSTemporaryDirectory() + "upload-\(UUID().uuidString).bin"
        try Data((0..<256).map { UInt8($0) }).write(to: URL(fileURLWithPath: file))
        _ = try runClient(
            "curl",
            [
                "-sS", "-x", proxy.address, "-F", "user=ann", "-F", "password=\(secret)", "-F", "upload=@\(file)",
                try Servers.httpbin + "/post",
            ])
        _ = try await proxy.finish()
        let sent = try Self.python(
            """
            import base64
            d = har['log']['entries'][0]['request']['postData']
            body = base64.b64decode(d['text']) if d.get('encoding') == 'base64' else d['text'].encode()
            print(d.get('encoding'), b'REDACTED-' in body, b'\\x00\\x01\\x02' in body, body.count(b'ann'))
            """, har: har)
        #expect(sent == "base64 True True 1\n")
        #expect(!(try String(contentsOfFile: har, encoding: .utf8)).contains(secret))
        let body = try Self.python(
            "import base64\nprint(base64.b64decode(har['log']['entries'][0]['request']['postData']['text']).count(b'\(secret)'))",
            har: har)
        #expect(body == "0\n")
    }

    @Test("a recorded JSON body is the server's, byte for byte, but for its secrets: layout and key order kept")
    func jsonBodyKept() async throws {
        let (proxy, har) = try await Self.proxy()
        let secret = "tok-\(UUID().uuidString)"
        let served = try runClient(
            "curl", ["-sS", "-x", proxy.address, try Servers.httpbin + "/get?access_token=\(secret)&user=ann"])
        _ = try await proxy.finish()
        let text = try Self.python("print(har['log']['entries'][0]['response']['content']['text'], end='')", har: har)
        #expect(!text.contains(secret))
        let restored = text.replacing(/REDACTED-[0-9a-f]{8}/, with: secret)
        #expect(restored == served.output)
        #expect(
            served.output.hasPrefix("{\n  \"args\": {\n    \"access_token\": "), "httpbin's layout: \(served.output)")
    }

    @Test("a streamed response keeps its pieces and when each came, as the server paced them")
    func streamedTiming() async throws {
        let (proxy, har) = try await Self.proxy()
        let events = try Servers.variable("EVENTS_URL")
        _ = try runClient("curl", ["-sS", "-N", "-x", proxy.address, events + "?count=5&interval=200"])
        _ = try await proxy.finish()
        let output = try Self.python(
            """
            chunks = har["log"]["entries"][0]["response"]["_chunks"]
            print(len(chunks), sum(chunk["size"] for chunk in chunks), har["log"]["entries"][0]["response"]["content"]["size"])
            print(" ".join(str(round(chunk["time"])) for chunk in chunks))
            """, har: har)
        let lines = output.split(separator: "\n")
        let counts = lines.first?.split(separator: " ").compactMap { Int($0) } ?? []
        #expect(counts.count == 3 && counts[0] >= 5 && counts[1] == counts[2])
        let times = lines.dropFirst().first?.split(separator: " ").compactMap { Double($0) } ?? []
        #expect(times == times.sorted())
        // Five events 200 ms apart: the last comes about 800 ms after the first.
        #expect((times.last ?? 0) - (times.first ?? 0) >= 700)
    }

    @Test("recording into an existing HAR keeps its entries and adds the new ones after them")
    func appends() async throws {
        let (first, har) = try await Self.proxy()
        _ = try runClient("curl", ["-sS", "-x", first.address, try Servers.nginx + "/small.txt"])
        _ = try await first.finish()
        let recorder = try HARRecorder(path: har)
        #expect(recorder.entryCount == 1)
        let second = try await RunningProxy(rules: "[record]\nall .\n") { $0.recorder = recorder }
        _ = try runClient("curl", ["-sS", "-x", second.address, try Servers.nginx + "/page.html"])
        _ = try await second.finish()
        let (entries, problems) = try TrafficReader.read(path: har)
        #expect(problems.isEmpty)
        #expect(entries.map { $0.request.url.hasSuffix("/small.txt") } == [true, false])
    }
}
