import AuditCache
import AuditPipeline
import AuditPolicy
import AuditProxy
import AuditReport
import Foundation
import Testing

/// `audit proxy --replay FILE.har`: a session recorded against the real servers, served back
/// without them, at its pace.
@Suite(.serialized) struct ProxyReplayTests {
    static let rules = "[record]\nall .\n"

    /// Records what `session` does through a recording proxy; returns the recording's path.
    static func record(keepingAtMost limit: Int = 64 << 20, _ session: (String) throws -> Void) async throws -> String {
        let path = NSTemporaryDirectory() + "replay-\(UUID().uuidString).har"
        let recorder = try HARRecorder(path: path, maximumBodyBytes: limit)
        let proxy = try await RunningProxy(rules: rules) { $0.recorder = recorder }
        try session(proxy.address)
        _ = try await proxy.finish()
        return path
    }

    /// The `request` objects of the HAR file at `path`, in order.
    static func recordedRequests(_ path: String) throws -> [[String: Any]] {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path)))
        let entries = ((object as? [String: Any])?["log"] as? [String: Any])?["entries"] as? [[String: Any]]
        return (entries ?? []).compactMap { $0["request"] as? [String: Any] }
    }

    /// A new file of 300,000 bytes to upload: more than a recording keeps at 64 KiB.
    static func upload300000Bytes() throws -> String {
        let path = NSTemporaryDirectory() + "upload-\(UUID().uuidString).bin"
        try Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 13) }).write(to: URL(fileURLWithPath: path))
        return path
    }

    /// A proxy replaying `path`.
    static func replaying(
        _ path: String, onMiss: HARReplay.OnMiss = .fail, speed: Double = 1, ignoring: Set<String> = [],
        recordingTo recorder: HARRecorder? = nil, reported: ReportedLines? = nil
    ) async throws -> RunningProxy {
        let replay = try HARReplay(path: path, ignoring: ignoring)
        return try await RunningProxy(rules: rules, reported: reported) { configuration in
            configuration.replay = replay
            configuration.replayMiss = onMiss
            configuration.replaySpeed = speed
            configuration.recorder = recorder
        }
    }

    /// A proxy with a fresh cache that a cache rule fills with every http response, set up further
    /// by `adjust`.
    static func caching(_ adjust: (inout ProxyConfiguration) -> Void) async throws -> RunningProxy {
        let cache = try HTTPCache(
            directory: NSTemporaryDirectory() + "replay-cache-" + UUID().uuidString, maximumBytes: 1 << 20,
            isShared: true)
        return try await RunningProxy(rules: "[cache]\nall ^http://\n") { configuration in
            configuration.cache = cache
            adjust(&configuration)
        }
    }

    static func log(_ variable: String, count marker: String) throws -> Int {
        try String(contentsOfFile: Servers.variable(variable), encoding: .utf8).components(separatedBy: "\n")
            .count { $0.contains(marker) }
    }

    /// The status line (and a line end) that a POST to `url` through `proxy` gets when its client
    /// sends the head with `framing` (a `Content-Length` or `Transfer-Encoding: chunked` line) and
    /// only `count` bytes of its body (as one chunk when chunked), then waits for the answer (5 s at
    /// most; nothing when none comes).
    static func statusOfPartialPost(
        to url: String, through proxy: RunningProxy, framing: String, sending count: Int
    ) throws -> String {
        let client = """
            import socket, sys, urllib.parse
            proxy = urllib.parse.urlsplit(sys.argv[2])
            client = socket.create_connection((proxy.hostname, proxy.port), timeout=5)
            count = int(sys.argv[4])
            chunk = b"%x\\r\\n" % count if sys.argv[3].startswith("Transfer-Encoding") else b""
            client.sendall(b"POST " + sys.argv[1].encode() + b" HTTP/1.1\\r\\nHost: "
                + urllib.parse.urlsplit(sys.argv[1]).netloc.encode() + b"\\r\\n" + sys.argv[3].encode()
                + b"\\r\\n\\r\\n" + chunk + b"x" * count)
            answer = b""
            while b"\\r\\n\\r\\n" not in answer:
                answer += client.recv(4096)
            print(answer.split(b"\\r\\n")[0].decode())
            """
        return try runClient("python3", ["-c", client, url, proxy.address, framing, String(count)]).output
    }

    @Test("a recorded session replays byte for byte, and the servers see none of it")
    func offline() async throws {
        let marker = "replay-\(UUID().uuidString)"
        let page = try Servers.nginx + "/page.html?\(marker)"
        let post = try Servers.httpbin + "/anything?m=\(marker)"
        var recorded: [String] = []
        let har = try await Self.record { proxy in
            recorded.append(try runClient("curl", ["-sS", "-x", proxy, page]).output)
            recorded.append(try runClient("curl", ["-sS", "-x", proxy, "--data", "a=1", post]).output)
        }
        let proxy = try await Self.replaying(har)
        let replayed = [
            try runClient("curl", ["-sS", "-x", proxy.address, page]).output,
            try runClient("curl", ["-sS", "-x", proxy.address, "--data", "a=1", post]).output,
        ]
        let records = try await proxy.finish()
        #expect(replayed == recorded)
        #expect(try Self.log("NGINX_ACCESS_LOG", count: marker) == 1)
        #expect(try Self.log("HTTPBIN_ACCESS_LOG", count: marker) == 1)
        #expect(records.map(\.outcome.kind) == [.replayed, .replayed])
        #expect(records.map(\.outcome.status) == [200, 200])
    }

    @Test("a HEAD request replays with the head its server gave, the length of the body it has not included")
    func headReplay() async throws {
        let page = try Servers.nginx + "/page.html?\(UUID().uuidString)"
        var recorded = ""
        let har = try await Self.record { proxy in
            recorded = try runClient("curl", ["-sS", "-I", "-x", proxy, page]).output
        }
        let proxy = try await Self.replaying(har)
        let replayed = try runClient("curl", ["-sS", "-I", "-x", proxy.address, page]).output
        let records = try await proxy.finish()
        let lengths = [recorded, replayed].map { head in
            head.split(separator: "\r\n").filter { $0.lowercased().hasPrefix("content-length:") }
        }
        #expect(lengths == [["Content-Length: 219"], ["Content-Length: 219"]])
        #expect(records.map(\.outcome.kind) == [.replayed])
    }

    @Test("a stream replays at its recorded pace, and at once with speed 0")
    func pace() async throws {
        let events = try Servers.variable("EVENTS_URL") + "?count=5&interval=200"
        var recorded = ""
        let har = try await Self.record { proxy in
            recorded = try runClient("curl", ["-sS", "-N", "-x", proxy, events]).output
        }
        for (speed, range) in [(1.0, 0.7...5.0), (0.0, 0.0...0.3)] {
            let proxy = try await Self.replaying(har, speed: speed)
            let run = try runClient(
                "curl", ["-sS", "-N", "-x", proxy.address, "-w", "\n%{time_total}", events])
            _ = try await proxy.finish()
            let lines = run.output.split(separator: "\n", omittingEmptySubsequences: false)
            let seconds = Double(lines.last ?? "") ?? -1
            #expect(range.contains(seconds), "speed \(speed): \(seconds) s")
            #expect(lines.dropLast().joined(separator: "\n") == recorded)
        }
    }

    @Test("a miss answers 504 with a JSON body naming the request and the recording, and is recorded")
    func miss() async throws {
        let har = try await Self.record { proxy in
            _ = try runClient("curl", ["-sS", "-x", proxy, try Servers.nginx + "/small.txt"])
        }
        let proxy = try await Self.replaying(har)
        let url = try Servers.nginx + "/page.html?never-recorded"
        let run = try runClient("curl", ["-sS", "-x", proxy.address, "-w", "\n%{http_code}", url])
        let records = try await proxy.finish()
        let lines = run.output.split(separator: "\n")
        #expect(lines.last == "504")
        let body = try #require(
            lines.first.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] })
        #expect(body["error"] as? String == "recording-miss")
        #expect((body["message"] as? String)?.contains("GET \(url)") == true)
        #expect((body["message"] as? String)?.contains(har) == true)
        #expect(records.map(\.outcome.kind) == [.failure])
    }

    @Test("a miss's line on standard error has its URL's secrets redacted, as its record has")
    func missLineRedacted() async throws {
        let har = try await Self.record { proxy in
            _ = try runClient("curl", ["-sS", "-x", proxy, try Servers.nginx + "/small.txt"])
        }
        let reported = ReportedLines()
        let proxy = try await Self.replaying(har, reported: reported)
        let url = try Servers.nginx + "/small.txt?access_token=s3cr3t-value&page=2"
        _ = try runClient("curl", ["-sS", "-x", proxy.address, url])
        let records = try await proxy.finish()
        let recordedURL = try #require(records.first?.request.url)
        #expect(recordedURL.contains("access_token=REDACTED-"))
        let line = try #require(reported.all.first)
        #expect(line.contains("no recorded response matches GET \(recordedURL) in the recording"), "\(line)")
        #expect(!line.contains("s3cr3t"))
    }

    @Test("--on-miss pass sends a miss on, and recording into the same file appends it (new episodes)")
    func passAndAppend() async throws {
        let har = try await Self.record { proxy in
            _ = try runClient("curl", ["-sS", "-x", proxy, try Servers.nginx + "/small.txt"])
        }
        let proxy = try await Self.replaying(har, onMiss: .pass, recordingTo: try HARRecorder(path: har))
        let hit = try runClient("curl", ["-sS", "-x", proxy.address, try Servers.nginx + "/small.txt"])
        let miss = try runClient("curl", ["-sS", "-x", proxy.address, try Servers.nginx + "/page.html"])
        let records = try await proxy.finish()
        #expect(hit.output == String(repeating: "x", count: 1_024))
        #expect(miss.output.contains("<html"))
        #expect(records.map(\.outcome.kind) == [.replayed, .response])
        let (entries, _) = try TrafficReader.read(path: har)
        #expect(entries.map { $0.request.url.hasSuffix("/page.html") } == [false, true])
    }

    @Test("--on-miss pass looks a miss up in the cache before the server: the second miss is a hit")
    func passThroughCache() async throws {
        let har = try await Self.record { proxy in
            _ = try runClient("curl", ["-sS", "-x", proxy, try Servers.nginx + "/small.txt"])
        }
        let replay = try HARReplay(path: har)
        let proxy = try await Self.caching { configuration in
            configuration.replay = replay
            configuration.replayMiss = .pass
        }
        let marker = "replay-cache-\(UUID().uuidString)"
        let url = try Servers.nginx + "/fresh/page.html?\(marker)"
        let direct = try runClient("curl", ["-sS", url]).output
        let misses = try (1...2).map { _ in try runClient("curl", ["-sS", "-x", proxy.address, url]).output }
        let records = try await proxy.finish()
        #expect(misses == [direct, direct])
        #expect(records.map(\.outcome.kind) == [.stored, .cached])
        #expect(try Self.log("NGINX_ACCESS_LOG", count: marker) == 2)  // direct, then the first miss
    }

    @Test(
        "through a caching proxy the recording keeps what the client got: hits and revalidated responses replay whole")
    func recordsCacheServed() async throws {
        let har = NSTemporaryDirectory() + "replay-\(UUID().uuidString).har"
        let recorder = try HARRecorder(path: har)
        let proxy = try await Self.caching { $0.recorder = recorder }
        let marker = UUID().uuidString
        let urls = try ["/fresh/page.html", "/no-cache/page.html"].map { try Servers.nginx + $0 + "?\(marker)" }
        let direct = try urls.map { try runClient("curl", ["-sS", $0]).output }
        let proxied = try urls.flatMap { url in
            try (1...2).map { _ in try runClient("curl", ["-sS", "-x", proxy.address, url]).output }
        }
        let records = try await proxy.finish()
        #expect(records.map(\.outcome.kind) == [.stored, .cached, .stored, .revalidated])
        #expect(proxied == [direct[0], direct[0], direct[1], direct[1]])
        let (entries, _) = try TrafficReader.read(path: har)
        #expect(entries.count == 4)
        let replaying = try await Self.replaying(har)
        let replayed = try urls.flatMap { url in
            try (1...2).map { _ in
                try runClient("curl", ["-sS", "-x", replaying.address, "-w", "%{http_code}", url]).output
            }
        }
        _ = try await replaying.finish()
        #expect(replayed == [direct[0], direct[0], direct[1], direct[1]].map { $0 + "200" })
    }

    @Test("--match-ignore leaves volatile parameters out of the match; identical requests replay in recorded order")
    func matching() async throws {
        let base = try Servers.httpbin + "/uuid"
        var recorded: [String] = []
        let har = try await Self.record { proxy in
            for stamp in [1, 2] {
                recorded.append(try runClient("curl", ["-sS", "-x", proxy, base + "?ts=\(stamp)"]).output)
            }
        }
        #expect(recorded[0] != recorded[1])
        let proxy = try await Self.replaying(har, ignoring: ["ts"])
        let replayed = try [77, 78, 79].map {
            try runClient("curl", ["-sS", "-x", proxy.address, base + "?ts=\($0)"]).output
        }
        _ = try await proxy.finish()
        #expect(replayed == [recorded[0], recorded[1], recorded[1]])
    }

    @Test("requests match on their body: another body is a miss")
    func bodyDigest() async throws {
        let url = try Servers.httpbin + "/anything"
        let har = try await Self.record { proxy in
            _ = try runClient("curl", ["-sS", "-x", proxy, "--data", #"{"q":"one"}"#, url])
        }
        let proxy = try await Self.replaying(har)
        let same = try runClient(
            "curl",
            ["-sS", "-x", proxy.address, "-o", "/dev/null", "-w", "%{http_code}", "--data", #"{"q":"one"}"#, url])
        let other = try runClient(
            "curl",
            ["-sS", "-x", proxy.address, "-o", "/dev/null", "-w", "%{http_code}", "--data", #"{"q":"two"}"#, url])
        _ = try await proxy.finish()
        #expect(same.output == "200")
        #expect(other.output == "504")
    }

    @Test("an upload larger than the recording keeps is recorded by its size and digest, and its replay matches on it")
    func largeUpload() async throws {
        let url = try Servers.variable("RAW_URL") + "/read-body"
        let upload = NSTemporaryDirectory() + "upload-\(UUID().uuidString).bin"
        let other = upload + ".other"
        var bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }
        try Data(bytes).write(to: URL(fileURLWithPath: upload))
        bytes[150_000] &+= 1
        try Data(bytes).write(to: URL(fileURLWithPath: other))
        let post = { (proxy: String, file: String) in
            try runClient(
                "curl",
                [
                    "-sS", "--max-time", "20", "-x", proxy, "-o", "/dev/null", "-w", "%{http_code}", "--data-binary",
                    "@" + file, url,
                ]
            ).output
        }
        var recorded = ""
        let har = try await Self.record(keepingAtMost: 64 << 10) { recorded = try post($0, upload) }
        let request = try #require(try Self.recordedRequests(har).first)
        let digest = try runClient("sha256sum", [upload]).output.prefix(64)
        #expect(request["bodySize"] as? Int == 300_000)
        #expect(request["_bodySHA256"] as? String == String(digest))
        #expect((request["postData"] as? [String: Any])?["_bodyOmitted"] as? Bool == true)
        let proxy = try await Self.replaying(har)
        let (same, changed) = (try post(proxy.address, upload), try post(proxy.address, other))
        let records = try await proxy.finish()
        #expect(recorded == "200")
        #expect(same == "200")
        #expect(changed == "504")
        #expect(records.map(\.outcome.kind) == [.replayed, .failure])
    }

    @Test(
        "a server that answers before the upload ends: the whole body is kept, or, cut short by the client, any body matches"
    )
    func earlyAnswer() async throws {
        let url = try Servers.variable("RAW_URL") + "/ok"
        let upload = try Self.upload300000Bytes()
        // Python's requests sends the whole body before it reads the answer; the socket client
        // sends the head and 1,000 of the 300,000 bytes it announces, reads the answer and leaves.
        let sendsOn = """
            import requests, sys
            answer = requests.post(sys.argv[1], data=open(sys.argv[2], "rb").read(), proxies={"http": sys.argv[3]})
            print(answer.text, end="")
            """
        let stops = """
            import socket, sys, urllib.parse
            proxy = urllib.parse.urlsplit(sys.argv[3])
            client = socket.create_connection((proxy.hostname, proxy.port))
            client.sendall(b"POST " + sys.argv[1].encode() + b" HTTP/1.1\\r\\nHost: "
                + urllib.parse.urlsplit(sys.argv[1]).netloc.encode() + b"\\r\\nContent-Length: 300000\\r\\n\\r\\n"
                + open(sys.argv[2], "rb").read(1000))
            answer = b""
            while not answer.endswith(b"ok"):
                answer += client.recv(4096)
            client.close()
            print(answer.split(b"\\r\\n\\r\\n", 1)[1].decode(), end="")
            """
        var answers: [String] = []
        let har = try await Self.record(keepingAtMost: 64 << 10) { proxy in
            for client in [sendsOn, stops] {
                answers.append(try runClient("python3", ["-c", client, url, upload, proxy]).output)
            }
        }
        let requests = try Self.recordedRequests(har)
        #expect(answers == ["ok", "ok"])
        #expect(requests.map { $0["bodySize"] as? Int } == [300_000, 1_000])
        #expect(requests.map { $0["_bodyIncomplete"] as? Bool } == [nil, true])
        #expect(
            requests.first?["_bodySHA256"] as? String == String(try runClient("sha256sum", [upload]).output.prefix(64)))
        let proxy = try await Self.replaying(har)
        let replayed = try ["@" + upload, "another body"].map { data in
            try runClient("curl", ["-sS", "--max-time", "20", "-x", proxy.address, "--data-binary", data, url]).output
        }
        let records = try await proxy.finish()
        #expect(replayed == ["ok", "ok"])
        #expect(records.map(\.outcome.kind) == [.replayed, .replayed])
    }

    @Test(
        "a server that answers and closes before the upload ends: the rest is read and recorded whole, the next request served"
    )
    func earlyAnswerThenClose() async throws {
        let url = try Servers.variable("RAW_URL") + "/ok"
        let upload = try Self.upload300000Bytes()
        // Sends the head and 1,000 bytes, reads the answer (its server has closed meanwhile), then
        // the other 299,000 bytes in pieces 20 ms apart and a second request on the same connection,
        // and reads its answer.
        let client = """
            import socket, sys, time, urllib.parse
            proxy = urllib.parse.urlsplit(sys.argv[3])
            client = socket.create_connection((proxy.hostname, proxy.port), timeout=10)
            head = (b" " + sys.argv[1].encode() + b" HTTP/1.1\\r\\nHost: "
                + urllib.parse.urlsplit(sys.argv[1]).netloc.encode())
            body = open(sys.argv[2], "rb").read()
            client.sendall(b"POST" + head + b"\\r\\nContent-Length: 300000\\r\\n\\r\\n" + body[:1000])
            answers = b""
            while not answers.endswith(b"ok"):
                answers += client.recv(4096)
            for start in range(1000, 300000, 29900):
                client.sendall(body[start:start + 29900])
                time.sleep(0.02)
            client.sendall(b"GET" + head + b"\\r\\n\\r\\n")
            while answers.count(b"ok") < 2:
                answers += client.recv(4096)
            print(answers.count(b"HTTP/1.1 200 OK"), end="")
            """
        var answered = ""
        let har = try await Self.record(keepingAtMost: 64 << 10) { proxy in
            answered = try runClient("python3", ["-c", client, url, upload, proxy]).output
        }
        let requests = try Self.recordedRequests(har)
        #expect(answered == "2")
        #expect(requests.map { $0["method"] as? String } == ["POST", "GET"])
        #expect(requests.first?["bodySize"] as? Int == 300_000)
        #expect(requests.first?["_bodyIncomplete"] == nil)
        #expect(
            requests.first?["_bodySHA256"] as? String == String(try runClient("sha256sum", [upload]).output.prefix(64)))
    }

    @Test("an upload that waits for 100 Continue is asked for its body, then answered from the recording")
    func expectContinue() async throws {
        let url = try Servers.variable("RAW_URL") + "/read-body"
        let har = try await Self.record { proxy in
            _ = try runClient("curl", ["-sS", "-x", proxy, "--data-binary", "twelve bytes", url])
        }
        let proxy = try await Self.replaying(har)
        // Sends the head, and the body only once a 100 Continue came (5 s at most); prints what came
        // before the body and the final answer's status line and body.
        let client = """
            import socket, sys, urllib.parse
            proxy = urllib.parse.urlsplit(sys.argv[2])
            client = socket.create_connection((proxy.hostname, proxy.port), timeout=5)
            client.sendall(b"POST " + sys.argv[1].encode() + b" HTTP/1.1\\r\\nHost: "
                + urllib.parse.urlsplit(sys.argv[1]).netloc.encode()
                + b"\\r\\nContent-Length: 12\\r\\nExpect: 100-continue\\r\\n\\r\\n")
            interim = b""
            while not interim.endswith(b"\\r\\n\\r\\n"):
                interim += client.recv(1)
            client.sendall(b"twelve bytes")
            answer = b""
            while not answer.endswith(b"bytes"):
                answer += client.recv(4096)
            print(interim.split(b"\\r\\n")[0].decode())
            print(answer.split(b"\\r\\n")[0].decode(), answer.split(b"\\r\\n\\r\\n", 1)[1].decode())
            """
        let run = try runClient("python3", ["-c", client, url, proxy.address])
        let records = try await proxy.finish()
        #expect(run.output == "HTTP/1.1 100 Continue\nHTTP/1.1 200 OK read 12 bytes\n")
        #expect(records.map(\.outcome.kind) == [.replayed])
    }

    @Test(
        "a request whose method and URL the recording has no response for is a miss before its body comes",
        arguments: [HARReplay.OnMiss.fail, .pass])
    func missBeforeBody(_ onMiss: HARReplay.OnMiss) async throws {
        let har = try await Self.record { proxy in
            _ = try runClient("curl", ["-sS", "-x", proxy, try Servers.nginx + "/small.txt"])
        }
        let proxy = try await Self.replaying(har, onMiss: onMiss)
        let status = try Self.statusOfPartialPost(
            to: try Servers.variable("RAW_URL") + "/ok", through: proxy, framing: "Content-Length: 300000",
            sending: 1_000)
        _ = try await proxy.finish()
        #expect(status == (onMiss == .fail ? "HTTP/1.1 504 Gateway Timeout\n" : "HTTP/1.1 200 OK\n"))
    }

    @Test(
        "a body announced or grown larger than the largest a recorded response matches is a miss before its end",
        arguments: [HARReplay.OnMiss.fail, .pass], ["Content-Length: 300000", "Transfer-Encoding: chunked"])
    func missPastLargestBody(_ onMiss: HARReplay.OnMiss, framing: String) async throws {
        let url = try Servers.variable("RAW_URL") + "/ok"
        let har = try await Self.record { proxy in
            _ = try runClient("curl", ["-sS", "-x", proxy, "--data-binary", "twelve bytes", url])
        }
        let proxy = try await Self.replaying(har, onMiss: onMiss)
        let status = try Self.statusOfPartialPost(to: url, through: proxy, framing: framing, sending: 100_000)
        let records = try await proxy.finish()
        #expect(status == (onMiss == .fail ? "HTTP/1.1 504 Gateway Timeout\n" : "HTTP/1.1 200 OK\n"))
        #expect(records.map(\.outcome.kind) == [onMiss == .fail ? .failure : .response])
    }

    @Test(
        "a body announced smaller than the largest recorded one, with a size none has, is a miss before it comes",
        arguments: [HARReplay.OnMiss.fail, .pass])
    func missOnAnnouncedSize(_ onMiss: HARReplay.OnMiss) async throws {
        let url = try Servers.variable("RAW_URL") + "/ok"
        let har = try await Self.record { proxy in
            _ = try runClient("curl", ["-sS", "-x", proxy, "--data-binary", "twelve bytes", url])
            _ = try runClient("curl", ["-sS", "-x", proxy, "--data-binary", "two", url])
        }
        let proxy = try await Self.replaying(har, onMiss: onMiss)
        // 11 bytes announced, 5 sent: only a miss decided on the announced size answers.
        let status = try Self.statusOfPartialPost(to: url, through: proxy, framing: "Content-Length: 11", sending: 5)
        let records = try await proxy.finish()
        #expect(status == (onMiss == .fail ? "HTTP/1.1 504 Gateway Timeout\n" : "HTTP/1.1 200 OK\n"))
        #expect(records.map(\.outcome.kind) == [onMiss == .fail ? .failure : .response])
    }
}
