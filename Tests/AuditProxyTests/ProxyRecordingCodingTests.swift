import AuditReport
import Foundation
import Testing

@testable import AuditProxy

/// Compressed responses in recordings: kept decoded, as HAR keeps a body and as redaction can read
/// it, and replayed as the client's application read them. The raw server's /coded/NAME answers a
/// JSON body holding a credential with the content coding NAME names.
@Suite(.serialized) struct ProxyRecordingCodingTests {
    static let secret = "sk-live-7f3a9c2e5b"

    static func coded(_ name: String) throws -> String { try Servers.variable("RAW_URL") + "/coded/\(name)" }

    /// Runs `script` in Python with `har` (the recording, read with json) and `arguments` in `sys.argv[2...]`.
    static func python(_ script: String, har: String, _ arguments: [String] = []) throws -> String {
        let run = try runClient(
            "python3",
            ["-c", "import base64, gzip, json, sys\nhar = json.load(open(sys.argv[1]))\n" + script, har] + arguments)
        #expect(run.status == 0, "\(run.errors)")
        return run.output
    }

    @Test(
        "a compressed JSON body is kept decoded, as the client's application read it, its credential redacted",
        arguments: ["gzip", "x-gzip", "gzip-members", "deflate", "raw-deflate", "br", "br-gzip", "zstd"])
    func keptDecoded(_ name: String) async throws {
        let (proxy, har) = try await ProxyRecordingTests.proxy()
        let url = try Self.coded(name)
        let client = try runClient("curl", ["-sS", "--compressed", "-x", proxy.address, url])
        let raw = NSTemporaryDirectory() + "coded-\(UUID().uuidString)"
        _ = try runClient("curl", ["-sS", "-o", raw, url])
        _ = try await proxy.finish()
        // What the application reads: curl's decoding, except that curl reads only the first of
        // several gzip members, where Python's gzip reads them all.
        let direct = NSTemporaryDirectory() + "decoded-\(UUID().uuidString)"
        if name == "gzip-members" {
            _ = try Self.python(
                "open(sys.argv[3], 'wb').write(gzip.decompress(open(sys.argv[2], 'rb').read()))", har: har,
                [raw, direct])
        } else {
            try Data(client.output.utf8).write(to: URL(fileURLWithPath: direct))
        }
        let verdict = try Self.python(
            """
            response = har["log"]["entries"][0]["response"]
            content = response["content"]
            kept, read = json.loads(content["text"]), json.loads(open(sys.argv[2], "rb").read())
            print(kept.pop("access_token").startswith("REDACTED-"), read.pop("access_token") == sys.argv[3])
            print(kept == read, "encoding" in content, "_contentCoding" in content)
            print(response["bodySize"] == len(open(sys.argv[4], "rb").read()))
            """, har: har, [direct, Self.secret, raw])
        #expect(verdict == "True True\nTrue False False\nTrue\n")
        #expect(try !String(contentsOfFile: har, encoding: .utf8).contains(Self.secret))
    }

    @Test(
        "a compressed JSON upload is kept decoded, its credential redacted, and replays matched on it without the secret",
        arguments: ["gzip", "deflate", "not-gzip"])
    func uploadKeptDecoded(_ coding: String) async throws {
        let (proxy, har) = try await ProxyRecordingTests.proxy()
        let url = try Servers.variable("RAW_URL") + "/read-body"
        let compress = ["gzip": "gzip.compress(text)", "deflate": "zlib.compress(text)", "not-gzip": "text"]
        let header = "Content-Encoding: " + (coding == "not-gzip" ? "gzip" : coding)
        /// curl's arguments to upload the JSON of `user` and `password`, coded, from a file.
        func upload(user: String, password: String) throws -> [String] {
            let body = NSTemporaryDirectory() + "upload-\(UUID().uuidString)"
            let write =
                "import gzip, sys, zlib\ntext = sys.argv[1].encode()\n"
                + "open(sys.argv[2], 'wb').write(\(compress[coding] ?? ""))"
            let json = #"{"user": "\#(user)", "password": "\#(password)"}"#
            #expect(try runClient("python3", ["-c", write, json, body]).status == 0)
            return ["-sS", "-H", header, "-H", "Content-Type: application/json", "--data-binary", "@" + body, url]
        }
        let sent = try upload(user: "ada", password: Self.secret)
        let recorded = try runClient("curl", ["-x", proxy.address] + sent).output
        _ = try await proxy.finish()
        let verdict = try Self.python(
            """
            import hashlib, re
            request = har["log"]["entries"][0]["request"]
            sent = open(sys.argv[2], "rb").read()
            post = request["postData"]
            unkeyed = re.sub(rb"REDACTED-[0-9a-f]{8}", b"REDACTED", post["text"].encode())
            print(request["bodySize"] == len(sent), "_bodySHA256" in request,
                  request["_redactedBodySHA256"] == hashlib.sha256(unkeyed).hexdigest())
            print(post.get("_contentCoding"), "encoding" in post)
            if "_contentCoding" not in post:
                kept = json.loads(post["text"])
                print(kept["user"], kept["password"].startswith("REDACTED-"))
            """, har: har, [String(sent[sent.count - 2].dropFirst())])
        if coding == "not-gzip" {
            #expect(verdict == "True False True\ngzip False\n")
        } else {
            #expect(verdict == "True False True\nNone False\nada True\n")
            #expect(try !String(contentsOfFile: har, encoding: .utf8).contains(Self.secret))
        }
        let replaying = try await ProxyReplayTests.replaying(har)
        let replayed = try runClient("curl", ["-x", replaying.address] + sent).output
        let otherPassword = try runClient("curl", ["-x", replaying.address] + upload(user: "ada", password: "x"))
        let otherUser = try runClient("curl", ["-x", replaying.address] + upload(user: "bob", password: Self.secret))
        let records = try await replaying.finish()
        #expect(replayed == recorded)
        #expect(otherPassword.output == recorded)
        #expect(otherUser.output.contains("recording-miss"))
        #expect(records.map(\.outcome.kind) == [.replayed, .replayed, .failure])
    }

    @Test("a body that does not decode as its coding says is kept as it came, and the coding named")
    func keptCoded() async throws {
        let (proxy, har) = try await ProxyRecordingTests.proxy()
        _ = try runClient("curl", ["-sS", "-x", proxy.address, try Self.coded("not-gzip")])
        _ = try await proxy.finish()
        let kept = try Self.python(
            """
            content = har["log"]["entries"][0]["response"]["content"]
            print(content["_contentCoding"], json.loads(content["text"])["access_token"].startswith("REDACTED-"))
            """, har: har)
        #expect(kept == "gzip True\n")
    }

    @Test("a compressed stream keeps its decoded pieces and when each came")
    func streamPieces() async throws {
        let (proxy, har) = try await ProxyRecordingTests.proxy()
        _ = try runClient("curl", ["-sS", "-N", "--compressed", "-x", proxy.address, try Self.coded("gzip-stream")])
        _ = try await proxy.finish()
        let pieces = try Self.python(
            """
            response = har["log"]["entries"][0]["response"]
            chunks = response["_chunks"]
            print(json.dumps(response["content"]["text"]), [chunk["size"] for chunk in chunks])
            print(all(b["time"] - a["time"] >= 150 for a, b in zip(chunks, chunks[1:])))
            """, har: har)
        #expect(pieces == #""{\"line\": 0}\n{\"line\": 1}\n{\"line\": 2}\n" [12, 12, 12]"# + "\nTrue\n")
    }

    @Test("a compressed page replays byte for byte as the client read it, without its coding")
    func replaysDecoded() async throws {
        let page = try Servers.nginx + "/gzip/page.html?\(UUID().uuidString)"
        var recorded = ""
        let har = try await ProxyReplayTests.record { proxy in
            recorded = try runClient("curl", ["-sS", "--compressed", "-x", proxy, page]).output
        }
        let coding = try Self.python(
            """
            headers = har["log"]["entries"][0]["response"]["headers"]
            print([h["value"] for h in headers if h["name"].lower() == "content-encoding"])
            """, har: har)
        #expect(coding == "['gzip']\n")
        let proxy = try await ProxyReplayTests.replaying(har)
        let decoding = try runClient("curl", ["-sS", "--compressed", "-D", "-", "-x", proxy.address, page]).output
        let plain = try runClient("curl", ["-sS", "-x", proxy.address, page]).output
        _ = try await proxy.finish()
        let (head, body) = Self.split(decoding)
        #expect(body == recorded)
        #expect(!head.lowercased().contains("content-encoding"))
        #expect(plain == recorded)
    }

    @Test("a body kept with its coding replays with it")
    func replaysCoded() async throws {
        let url = try Self.coded("not-gzip")
        let har = try await ProxyReplayTests.record { proxy in _ = try runClient("curl", ["-sS", "-x", proxy, url]) }
        let proxy = try await ProxyReplayTests.replaying(har)
        let replayed = try runClient("curl", ["-sS", "-D", "-", "-x", proxy.address, url]).output
        _ = try await proxy.finish()
        let (head, body) = Self.split(replayed)
        #expect(head.lowercased().contains("content-encoding: gzip"))
        #expect(body.contains("REDACTED-") && !body.contains(Self.secret))
    }

    /// A response as `curl -D -` prints it: head and body.
    static func split(_ response: String) -> (head: String, body: String) {
        guard let end = response.range(of: "\r\n\r\n") else { return (response, "") }
        return (String(response[..<end.lowerBound]), String(response[end.upperBound...]))
    }
}

/// What `audit proxy --record` keeps of a body larger than the recording keeps.
@Suite(.serialized) struct ProxyRecordingBoundTests {
    @Test("a download larger than the recording keeps reaches the client whole; its entry keeps the size alone")
    func largeDownload() async throws {
        let path = NSTemporaryDirectory() + "bound-\(UUID().uuidString).har"
        let recorder = try HARRecorder(path: path, maximumBodyBytes: 1 << 20)
        let proxy = try await RunningProxy(rules: "[record]\nall .\n") { $0.recorder = recorder }
        let large = try runClient(
            "curl",
            ["-sS", "-o", "/dev/null", "-w", "%{size_download}", "-x", proxy.address, Servers.nginx + "/medium.bin"])
        let small = try runClient("curl", ["-sS", "-x", proxy.address, Servers.nginx + "/small.txt"])
        _ = try await proxy.finish()
        #expect(large.output == "10000000")
        let kept = try ProxyRecordingCodingTests.python(
            """
            for entry in har["log"]["entries"]:
                content = entry["response"]["content"]
                print(entry["response"]["bodySize"], content["size"], len(content["text"]), content.get("_bodyOmitted", False))
            """, har: path)
        #expect(
            kept
                == "10000000 10000000 0 True\n\(small.output.utf8.count) \(small.output.utf8.count) \(small.output.utf8.count) False\n"
        )
    }
}
