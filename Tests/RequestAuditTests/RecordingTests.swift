import AuditPolicy
import AuditReport
import Foundation
import RequestAudit
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How often `marker` appears in the access log of `variable` (`Tests/with-httpbin.sh`).
private func accessLog(_ variable: String, count marker: String) throws -> Int {
    let path = try #require(ProcessInfo.processInfo.environment[variable], "\(variable) is not set")
    return try String(contentsOfFile: path, encoding: .utf8).components(separatedBy: "\n").count { $0.contains(marker) }
}

extension InterceptionTests {
    @Suite struct Recordings {
        static func session(_ mode: RecordingMode) throws -> AuditedSession {
            try AuditedSession(rules: "[record]\nall .\n") { $0.recording = mode }
        }

        /// A path for a new recording, in the temporary folder.
        static func newRecordingPath() -> String {
            NSTemporaryDirectory() + "app-\(UUID().uuidString).har"
        }

        /// The entries of the recording at `har`.
        static func entries(_ har: String) throws -> [[String: Any]] {
            let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: har)))
            return try #require(((object as? [String: Any])?["log"] as? [String: Any])?["entries"] as? [[String: Any]])
        }

        @Test(
            "a session recorded in an app replays in every caller style, byte for byte, without the servers",
            arguments: CallerStyle.allCases)
        func recordAndReplay(_ style: CallerStyle) async throws {
            let har = Self.newRecordingPath()
            let marker = "app-replay-\(UUID().uuidString)"
            let nginx = try #require(ProcessInfo.processInfo.environment["NGINX_URL"])
            let page = URLRequest(url: HTTPBin.url(nginx + "/page.html?\(marker)"))
            var post = URLRequest(url: HTTPBin.url(.anything("m-\(marker)")))
            post.httpMethod = "POST"
            post.httpBody = Data(#"{"q":"one"}"#.utf8)
            post.setValue("application/json", forHTTPHeaderField: "Content-Type")
            let recording = try Self.session(.record(har))
            let recorded = [await style.run(page, on: recording.session), await style.run(post, on: recording.session)]
            _ = try await recording.finish()
            let replaying = try Self.session(.replay(har, onMiss: .fail))
            let replayed = [await style.run(page, on: replaying.session), await style.run(post, on: replaying.session)]
            let records = try await replaying.finish()
            #expect(replayed.map(\.body) == recorded.map(\.body))
            #expect(replayed.map(\.status) == [200, 200])
            #expect(replayed.first?.headers["content-type"] == "text/html")
            #expect(try accessLog("NGINX_ACCESS_LOG", count: marker) == 1)
            #expect(try accessLog("HTTPBIN_ACCESS_LOG", count: marker) == 1)
            #expect(records.map(\.outcome.kind) == [.replayed, .replayed])
        }

        @Test(
            "a stream recorded in an app keeps its pieces' timing and replays at that pace",
            arguments: CallerStyle.allCases)
        func streamPace(_ style: CallerStyle) async throws {
            let har = Self.newRecordingPath()
            let events = try #require(ProcessInfo.processInfo.environment["EVENTS_URL"])
            let request = URLRequest(url: HTTPBin.url(events + "?count=5&interval=200"))
            let recording = try Self.session(.record(har))
            let recorded = await style.run(request, on: recording.session)
            _ = try await recording.finish()
            let replaying = try Self.session(.replay(har, onMiss: .fail))
            let start = ContinuousClock.now
            let replayed = await style.run(request, on: replaying.session)
            let elapsed = ContinuousClock.now - start
            _ = try await replaying.finish()
            #expect(replayed.body == recorded.body)
            #expect(elapsed >= .milliseconds(700), "replayed in \(elapsed)")
            let text = try String(contentsOfFile: har, encoding: .utf8)
            #expect(text.contains("\"_chunks\""))
        }

        @Test(
            "a download larger than the recording keeps reaches the app whole; its entry keeps the size alone",
            arguments: CallerStyle.allCases)
        func largeDownload(_ style: CallerStyle) async throws {
            let har = Self.newRecordingPath()
            let nginx = try #require(ProcessInfo.processInfo.environment["NGINX_URL"])
            let recording = try AuditedSession(rules: "[record]\nall .\n") {
                $0.recording = .record(har)
                $0.recordingMaximumBodyBytes = 1 << 20
            }
            let large = await style.run(URLRequest(url: HTTPBin.url(nginx + "/medium.bin")), on: recording.session)
            _ = try await recording.finish()
            #expect(large.body?.count == 10_000_000)
            let response = try #require(try Self.entries(har).first?["response"] as? [String: Any])
            let content = try #require(response["content"] as? [String: Any])
            #expect(response["bodySize"] as? Int == 10_000_000)
            #expect(content["_bodyOmitted"] as? Bool == true)
            #expect(content["text"] as? String == "")
        }

        @Test("a request the recording has no response for gets 504 with a JSON body naming it")
        func miss() async throws {
            let har = Self.newRecordingPath()
            let recording = try Self.session(.record(har))
            _ = await CallerStyle.async.run(URLRequest(url: HTTPBin.url(.get(query: "a=1"))), on: recording.session)
            _ = try await recording.finish()
            let replaying = try Self.session(.replay(har, onMiss: .fail))
            let missed = await CallerStyle.async.run(
                URLRequest(url: HTTPBin.url(.get(query: "a=2"))), on: replaying.session)
            let records = try await replaying.finish()
            #expect(missed.status == 504)
            let body = try #require(
                missed.body.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] })
            #expect(body["error"] as? String == "recording-miss")
            #expect((body["message"] as? String)?.contains(har) == true)
            #expect(records.map(\.outcome.kind) == [.failure])
        }

        @Test(
            "with onMiss .record a miss, or a request whose recorded responses are used up, goes to the server and is added to the recording, which then answers it"
        )
        func newEpisodes() async throws {
            let har = Self.newRecordingPath()
            let marker = "app-episodes-\(UUID().uuidString)"
            let (first, second) = (
                URLRequest(url: HTTPBin.url(.anything("one-\(marker)"))),
                URLRequest(url: HTTPBin.url(.anything("two-\(marker)")))
            )
            let recording = try Self.session(.record(har))
            _ = await CallerStyle.async.run(first, on: recording.session)
            _ = try await recording.finish()
            let episodes = try Self.session(.replay(har, onMiss: .record))
            let hit = await CallerStyle.async.run(first, on: episodes.session)
            let missed = await CallerStyle.async.run(second, on: episodes.session)
            let again = await CallerStyle.async.run(first, on: episodes.session)
            let episodeRecords = try await episodes.finish()
            let replaying = try Self.session(.replay(har, onMiss: .fail))
            let replayed = [
                await CallerStyle.async.run(second, on: replaying.session),
                await CallerStyle.async.run(first, on: replaying.session),
                await CallerStyle.async.run(first, on: replaying.session),
            ]
            let replayRecords = try await replaying.finish()
            #expect([hit, missed, again].map(\.status) == [200, 200, 200])
            #expect(episodeRecords.map(\.outcome.kind) == [.replayed, .response, .response])
            #expect(replayed.map(\.body) == [missed.body, hit.body, again.body])
            #expect(replayRecords.map(\.outcome.kind) == [.replayed, .replayed, .replayed])
            #expect(try Self.entries(har).count == 3)
            #expect(try accessLog("HTTPBIN_ACCESS_LOG", count: marker) == 3)
        }

        @Test("a query parameter named in ignoring does not stop a match; without it the request is a miss")
        func ignoredParameters() async throws {
            let har = Self.newRecordingPath()
            let recording = try Self.session(.record(har))
            let recorded = await CallerStyle.async.run(
                URLRequest(url: HTTPBin.url(.get(query: "a=1&t=100"))), on: recording.session)
            _ = try await recording.finish()
            let later = URLRequest(url: HTTPBin.url(.get(query: "t=200&a=1")))
            let ignoring = try Self.session(.replay(har, onMiss: .fail, ignoring: ["t"]))
            let matched = await CallerStyle.async.run(later, on: ignoring.session)
            let ignoringRecords = try await ignoring.finish()
            let strict = try Self.session(.replay(har, onMiss: .fail))
            let missed = await CallerStyle.async.run(later, on: strict.session)
            _ = try await strict.finish()
            #expect(matched.status == 200)
            #expect(matched.body == recorded.body)
            #expect(ignoringRecords.map(\.outcome.kind) == [.replayed])
            #expect(missed.status == 504)
        }

        @Test("at speed 0 a recorded stream replays at once", arguments: CallerStyle.allCases)
        func speedZero(_ style: CallerStyle) async throws {
            let har = Self.newRecordingPath()
            let events = try #require(ProcessInfo.processInfo.environment["EVENTS_URL"])
            let request = URLRequest(url: HTTPBin.url(events + "?count=5&interval=300"))
            let recording = try Self.session(.record(har))
            let recorded = await style.run(request, on: recording.session)
            _ = try await recording.finish()
            let replaying = try Self.session(.replay(har, onMiss: .fail, speed: 0))
            let start = ContinuousClock.now
            let replayed = await style.run(request, on: replaying.session)
            let elapsed = ContinuousClock.now - start
            _ = try await replaying.finish()
            #expect(replayed.body == recorded.body)
            #expect(elapsed < .milliseconds(1_200), "replayed in \(elapsed), recorded over 1.2 s")
        }

        /// The ways an app sends a body that is not the request's `httpBody`.
        enum BodyStyle: String, CaseIterable, Sendable, CustomTestStringConvertible {
            case uploadFromData, uploadFromFile, bodyStream

            var testDescription: String { rawValue }

            /// Sends `request` with `body` on `session` in this style.
            func run(_ request: URLRequest, body: Data, on session: URLSession) async throws -> Exchange {
                switch self {
                case .uploadFromData:
                    do {
                        let (data, response) = try await session.upload(for: request, from: body)
                        return Exchange(data: data, response: response, error: nil)
                    } catch {
                        return Exchange(data: nil, response: nil, error: error)
                    }
                case .uploadFromFile:
                    let file = URL(fileURLWithPath: NSTemporaryDirectory() + "upload-\(UUID().uuidString)")
                    try body.write(to: file)
                    return await withCheckedContinuation { continuation in
                        session.uploadTask(with: request, fromFile: file) { data, response, error in
                            continuation.resume(returning: Exchange(data: data, response: response, error: error))
                        }.resume()
                    }
                case .bodyStream:
                    var streamed = request
                    streamed.httpBodyStream = InputStream(data: body)
                    return await CallerStyle.completionHandler.run(streamed, on: session)
                }
            }
        }

        @Test(
            "an upload or a body stream is recorded with its body and replayed matched on it; another body is a miss",
            arguments: BodyStyle.allCases)
        func bodiesBeyondHTTPBody(_ style: BodyStyle) async throws {
            let har = Self.newRecordingPath()
            let marker = "app-upload-\(UUID().uuidString)"
            var post = URLRequest(url: HTTPBin.url(.anything(marker)))
            post.httpMethod = "POST"
            post.setValue("text/plain", forHTTPHeaderField: "Content-Type")
            let recording = try Self.session(.record(har))
            let recorded = try await style.run(post, body: Data("body one".utf8), on: recording.session)
            _ = try await recording.finish()
            let replaying = try Self.session(.replay(har, onMiss: .fail))
            let same = try await style.run(post, body: Data("body one".utf8), on: replaying.session)
            let other = try await style.run(post, body: Data("body two".utf8), on: replaying.session)
            let records = try await replaying.finish()
            let echoed = try #require(
                recorded.body.flatMap { try? JSONSerialization.jsonObject(with: $0) as? [String: Any] })
            #expect(echoed["data"] as? String == "body one")
            #expect(same.status == 200)
            #expect(same.body == recorded.body)
            #expect(other.status == 504)
            #expect(records.map(\.outcome.kind) == [.replayed, .failure])
            #expect(try accessLog("HTTPBIN_ACCESS_LOG", count: marker) == 1)
            let request = try #require(try Self.entries(har).first?["request"] as? [String: Any])
            #expect((request["postData"] as? [String: Any])?["text"] as? String == "body one")
        }

        @Test(
            "a replayed response is what the caller saw when it was recorded, every header included: HEAD, gzip-coded, chunked",
            arguments: CallerStyle.allCases)
        func replayedHeads(_ style: CallerStyle) async throws {
            let har = Self.newRecordingPath()
            let nginx = try #require(ProcessInfo.processInfo.environment["NGINX_URL"])
            var head = URLRequest(url: HTTPBin.url(nginx + "/page.html?\(UUID().uuidString)"))
            head.httpMethod = "HEAD"
            let requests = [
                head, URLRequest(url: HTTPBin.url(.gzip)), URLRequest(url: HTTPBin.url(.streamBytes(9000))),
            ]
            let recording = try Self.session(.record(har))
            var recorded: [Exchange] = []
            for request in requests { recorded.append(await style.run(request, on: recording.session)) }
            _ = try await recording.finish()
            let replaying = try Self.session(.replay(har, onMiss: .fail))
            var replayed: [Exchange] = []
            for request in requests { replayed.append(await style.run(request, on: replaying.session)) }
            let records = try await replaying.finish()
            #expect(replayed == recorded)
            #expect(recorded.first?.headers["content-length"] == "219")
            #expect(recorded.dropFirst().first?.headers["content-encoding"] == "gzip")
            #expect(recorded.last?.headers["transfer-encoding"] == "chunked")
            #expect(records.map(\.outcome.kind) == [.replayed, .replayed, .replayed])
        }

        @Test("cookies a response sets on two Set-Cookie lines, which Foundation joins into one, are each hidden")
        func joinedSetCookies() async throws {
            let har = Self.newRecordingPath()
            let secrets = ["first-\(UUID().uuidString)", "second-\(UUID().uuidString)"]
            let base = HTTPBin.url(.headers).absoluteString.replacingOccurrences(of: "/headers", with: "")
            let url =
                base + "/response-headers?Set-Cookie=a%3D\(secrets[0])%3B%20Path%3D%2F"
                + "&Set-Cookie=b%3D\(secrets[1])%3B%20Expires%3DWed%2C%2021%20Oct%202026%2007%3A28%3A00%20GMT"
            let recording = try Self.session(.record(har))
            let sent = await CallerStyle.completionHandler.run(
                URLRequest(url: URL(string: url)!), on: recording.session)
            _ = try await recording.finish()
            #expect(sent.headers["set-cookie"]?.contains(", b=") == true)
            // The URL names the cookies it asks httpbin to set (a URL keeps what no rule names): the
            // response's headers, cookies and body (httpbin's echo) are what must not.
            let response = try #require(try Self.entries(har).first?["response"] as? [String: Any])
            let written = try JSONSerialization.data(
                withJSONObject: [response["headers"], response["cookies"], response["content"]])
            for secret in secrets {
                #expect(!String(decoding: written, as: UTF8.self).contains(secret), "\(secret) is in the response")
            }
            let cookies = try #require(response["cookies"] as? [[String: Any]])
            #expect(cookies.map { $0["name"] as? String } == ["a", "b"])
        }

        @Test("a form an app posts without a Content-Type (Foundation sends it as a form) has its password redacted")
        func untypedForm() async throws {
            let har = Self.newRecordingPath()
            let secret = "hunter2-\(UUID().uuidString)"
            var post = URLRequest(url: HTTPBin.url(.post))
            post.httpMethod = "POST"
            post.httpBody = Data("user=ann&password=\(secret)".utf8)
            let recording = try Self.session(.record(har))
            let sent = await CallerStyle.completionHandler.run(post, on: recording.session)
            _ = try await recording.finish()
            // httpbin read it as a form: Foundation sent it as one.
            let echo = try JSONSerialization.jsonObject(with: try #require(sent.body)) as? [String: Any]
            #expect((echo?["form"] as? [String: Any])?["user"] as? String == "ann")
            #expect(!(try String(contentsOfFile: har, encoding: .utf8)).contains(secret))
            let request = try #require(try Self.entries(har).first?["request"] as? [String: Any])
            let text = try #require((request["postData"] as? [String: Any])?["text"] as? String)
            #expect(text.hasPrefix("user=ann&password=REDACTED-"), "\(text)")
        }

        @Test(
            "a recorded login replays for its password or another, never for another user, and the HAR has no digest of it",
            arguments: CallerStyle.allCases)
        func loginReplays(_ style: CallerStyle) async throws {
            let har = Self.newRecordingPath()
            let login = { (user: String, password: String) in
                var post = URLRequest(url: HTTPBin.url(.post))
                post.httpMethod = "POST"
                post.httpBody = Data("user=\(user)&password=\(password)".utf8)
                return post
            }
            let recording = try Self.session(.record(har))
            let recorded = await style.run(login("ann", "hunter2"), on: recording.session)
            _ = try await recording.finish()
            let request = try #require(try Self.entries(har).first?["request"] as? [String: Any])
            #expect(request["_bodySHA256"] == nil && request["_redactedBodySHA256"] != nil)
            let replaying = try Self.session(.replay(har, onMiss: .fail))
            let same = await style.run(login("ann", "hunter2"), on: replaying.session)
            let other = await style.run(login("ann", "a much longer password"), on: replaying.session)
            let stranger = await style.run(login("bob", "hunter2"), on: replaying.session)
            let records = try await replaying.finish()
            // httpbin's echo, its password redacted as the recording keeps it.
            let echo = try JSONSerialization.jsonObject(with: try #require(same.body)) as? [String: Any]
            #expect(recorded.status == 200 && same.status == 200)
            #expect((echo?["form"] as? [String: Any])?["user"] as? String == "ann")
            #expect(other.body == same.body)
            #expect(stranger.status == 504)
            #expect(records.map(\.outcome.kind) == [.replayed, .replayed, .failure])
        }

        @Test(
            "a body the app sends gzip-coded is recorded decoded and redacted, and replayed matched on that form")
        func codedBody() async throws {
            let har = Self.newRecordingPath()
            let raw = try #require(ProcessInfo.processInfo.environment["RAW_URL"])
            var post = URLRequest(url: HTTPBin.url(raw + "/read-body"))
            post.httpMethod = "POST"
            post.setValue("gzip", forHTTPHeaderField: "Content-Encoding")
            post.setValue("application/json", forHTTPHeaderField: "Content-Type")
            // gzip of `{"password": "hunter2"}` and a line feed, as `gzip -n` writes it.
            let coded = Data([
                0x1F, 0x8B, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x03, 0xAB, 0x56, 0x2A, 0x48, 0x2C, 0x2E, 0x2E,
                0xCF, 0x2F, 0x4A, 0x51, 0xB2, 0x52, 0x50, 0xCA, 0x28, 0xCD, 0x2B, 0x49, 0x2D, 0x32, 0x52, 0xAA, 0xE5,
                0x02, 0x00, 0xDD, 0xA9, 0x68, 0x72, 0x18, 0x00, 0x00, 0x00,
            ])
            post.httpBody = coded
            let recording = try Self.session(.record(har))
            let recorded = await CallerStyle.completionHandler.run(post, on: recording.session)
            _ = try await recording.finish()
            let replaying = try Self.session(.replay(har, onMiss: .fail))
            let replayed = await CallerStyle.completionHandler.run(post, on: replaying.session)
            let records = try await replaying.finish()
            let request = try #require(try Self.entries(har).first?["request"] as? [String: Any])
            let postData = try #require(request["postData"] as? [String: Any])
            let text = try #require(postData["text"] as? String)
            #expect(recorded.body == Data("read 44 bytes".utf8))
            // The body as sent but for the secret, its space and line feed kept.
            #expect(text.hasPrefix("{\"password\": \"REDACTED-") && text.hasSuffix("\"}\n"), "\(text)")
            #expect(postData["_contentCoding"] == nil)
            #expect(request["bodySize"] as? Int == 44 && request["_bodySHA256"] == nil)
            #expect(!(try String(contentsOfFile: har, encoding: .utf8).contains("hunter2")))
            #expect(replayed.body == recorded.body)
            #expect(records.map(\.outcome.kind) == [.replayed])
        }

        @Test(
            "an upload larger than the recording keeps is recorded by its size and digest and replayed matched on it",
            arguments: BodyStyle.allCases)
        func largeUpload(_ style: BodyStyle) async throws {
            let har = Self.newRecordingPath()
            let raw = try #require(ProcessInfo.processInfo.environment["RAW_URL"])
            var post = URLRequest(url: HTTPBin.url(raw + "/read-body"))
            post.httpMethod = "POST"
            var bytes = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }
            let body = Data(bytes)
            bytes[150_000] &+= 1
            let changed = Data(bytes)
            let recording = try AuditedSession(rules: "[record]\nall .\n") {
                $0.recording = .record(har)
                $0.recordingMaximumBodyBytes = 64 << 10
            }
            let recorded = try await style.run(post, body: body, on: recording.session)
            _ = try await recording.finish()
            let replaying = try Self.session(.replay(har, onMiss: .fail))
            let same = try await style.run(post, body: body, on: replaying.session)
            let other = try await style.run(post, body: changed, on: replaying.session)
            let records = try await replaying.finish()
            #expect(recorded.body == Data("read 300000 bytes".utf8))
            #expect(same.body == recorded.body)
            #expect(other.status == 504)
            #expect(records.map(\.outcome.kind) == [.replayed, .failure])
            let request = try #require(try Self.entries(har).first?["request"] as? [String: Any])
            #expect(request["bodySize"] as? Int == 300_000)
            #expect((request["postData"] as? [String: Any])?["_bodyOmitted"] as? Bool == true)
        }

        /// The process's resident bytes now (`VmRSS`) or at their peak (`VmHWM`), from /proc.
        static func residentBytes(_ field: String) throws -> Int {
            let status = try String(contentsOfFile: "/proc/self/status", encoding: .utf8)
            let line = try #require(status.split(separator: "\n").first { $0.hasPrefix(field + ":") })
            return try #require(Int(line.split(separator: " ", omittingEmptySubsequences: true)[1])) * 1_024
        }

        @Test(
            "a large upload is recorded, and sent, from pieces of it: the process never holds it whole",
            arguments: [BodyStyle.uploadFromFile, .bodyStream])
        func largeUploadInPieces(_ style: BodyStyle) async throws {
            let har = Self.newRecordingPath()
            let raw = try #require(ProcessInfo.processInfo.environment["RAW_URL"])
            var post = URLRequest(url: HTTPBin.url(raw + "/read-body"))
            post.httpMethod = "POST"
            // 256 MiB of zeros, sparse: nothing on disk, and quick to read. A stream of it is
            // spooled to a file of the recording's own.
            let size = 256 << 20
            let file = URL(fileURLWithPath: NSTemporaryDirectory() + "sparse-upload-\(UUID().uuidString)")
            #expect(FileManager.default.createFile(atPath: file.path, contents: nil))
            defer { try? FileManager.default.removeItem(at: file) }
            let writer = try FileHandle(forWritingTo: file)
            try writer.truncate(atOffset: UInt64(size))
            try writer.close()
            let recording = try AuditedSession(rules: "[record]\nall .\n") {
                $0.recording = .record(har)
                $0.recordingMaximumBodyBytes = 64 << 10
            }
            let resident = try Self.residentBytes("VmRSS")
            // The peak (VmHWM) starts again from what is resident now.
            let peakReset = try #require(FileHandle(forWritingAtPath: "/proc/self/clear_refs"))
            try peakReset.write(contentsOf: Data("5".utf8))
            try peakReset.close()
            let recorded: Exchange
            if style == .bodyStream {
                post.httpBodyStream = InputStream(url: file)
                recorded = await CallerStyle.completionHandler.run(post, on: recording.session)
            } else {
                recorded = await withCheckedContinuation { continuation in
                    recording.session.uploadTask(with: post, fromFile: file) { data, response, error in
                        continuation.resume(returning: Exchange(data: data, response: response, error: error))
                    }.resume()
                }
            }
            let peak = try Self.residentBytes("VmHWM")
            _ = try await recording.finish()
            var zeros = SHA256()
            for _ in 0..<(size >> 20) { zeros.update([UInt8](repeating: 0, count: 1 << 20)) }
            let request = try #require(try Self.entries(har).first?["request"] as? [String: Any])
            #expect(recorded.body == Data("read \(size) bytes".utf8))
            #expect(peak - resident < size / 2, "peak \(peak), resident before \(resident)")
            #expect(request["bodySize"] as? Int == size)
            #expect(request["_bodySHA256"] as? String == zeros.finalize().map { String(format: "%02x", $0) }.joined())
        }

        @Test(
            "an upload relayed for a recording reaches the server as the direct upload does",
            arguments: [BodyStyle.uploadFromData, .uploadFromFile])
        func uploadAsDirect(_ style: BodyStyle) async throws {
            var post = URLRequest(url: HTTPBin.url(.anything("upload-as-direct")))
            post.httpMethod = "POST"
            let body = Data(#"{"prompt":"hello"}"#.utf8)
            let direct = URLSession(configuration: .ephemeral)
            defer { direct.finishTasksAndInvalidate() }
            let echo = { (exchange: Exchange) throws -> NSDictionary in
                let object = try #require(
                    exchange.body.flatMap { try? JSONSerialization.jsonObject(with: $0) as? NSDictionary })
                return NSDictionary(dictionary: [
                    "method": object["method"] ?? "", "data": object["data"] ?? "", "form": object["form"] ?? "",
                    "headers": object["headers"] ?? "",
                ])
            }
            let expected = try echo(try await style.run(post, body: body, on: direct))
            let recording = try Self.session(.record(Self.newRecordingPath()))
            let audited = try echo(try await style.run(post, body: body, on: recording.session))
            _ = try await recording.finish()
            #expect(audited == expected)
        }

        @Test(
            "with a cache the recording keeps what the app got: hits and revalidated responses replay whole",
            arguments: CallerStyle.allCases)
        func recordsCacheServed(_ style: CallerStyle) async throws {
            let har = Self.newRecordingPath()
            let folder = NSTemporaryDirectory() + "app-cache-\(UUID().uuidString)"
            let nginx = try #require(ProcessInfo.processInfo.environment["NGINX_URL"])
            let marker = UUID().uuidString
            let requests = ["/fresh/page.html", "/no-cache/page.html"].map {
                URLRequest(url: HTTPBin.url(nginx + $0 + "?\(marker)"))
            }
            let recording = try AuditedSession(rules: "[cache]\nall ^http://\n") {
                $0.cacheDirectory = folder
                $0.recording = .record(har)
            }
            var recorded: [Exchange] = []
            for request in requests {
                for _ in 1...2 { recorded.append(await style.run(request, on: recording.session)) }
            }
            let records = try await recording.finish()
            let replaying = try Self.session(.replay(har, onMiss: .fail))
            var replayed: [Exchange] = []
            for request in requests {
                for _ in 1...2 { replayed.append(await style.run(request, on: replaying.session)) }
            }
            _ = try await replaying.finish()
            #expect(records.map(\.outcome.kind) == [.stored, .cached, .stored, .revalidated])
            #expect(recorded.map(\.status) == [200, 200, 200, 200])
            #expect(replayed.map(\.status) == [200, 200, 200, 200])
            #expect(replayed.map(\.body) == recorded.map(\.body))
            #expect(recorded.allSatisfy { ($0.body?.count ?? 0) > 0 })
        }

        /// A new recording of httpbin's two redirects, followed in `style`: its path, the request,
        /// and what the caller got.
        static func recordedRedirects(_ style: CallerStyle) async throws -> (
            har: String, request: URLRequest, recorded: Exchange
        ) {
            let har = Self.newRecordingPath()
            let request = URLRequest(url: HTTPBin.url(.redirect(count: 2)))
            let recording = try Self.session(.record(har))
            let recorded = await style.run(request, on: recording.session)
            _ = try await recording.finish()
            return (har, request, recorded)
        }

        @Test(
            "a redirect is recorded hop by hop and replayed to the last response, with its URL, as Foundation follows it",
            arguments: CallerStyle.allCases)
        func redirects(_ style: CallerStyle) async throws {
            let (har, request, recorded) = try await Self.recordedRedirects(style)
            let replaying = try Self.session(.replay(har, onMiss: .fail))
            let replayed = await style.run(request, on: replaying.session)
            let records = try await replaying.finish()
            let (entries, _) = try TrafficReader.read(path: har)
            #expect(
                entries.map(\.request.url) == [
                    HTTPBin.base + "/redirect/2", HTTPBin.base + "/relative-redirect/1", HTTPBin.base + "/get",
                ])
            #expect(recorded.status == 200)
            #expect(replayed.status == 200)
            #expect(replayed.url == recorded.url)
            #expect(replayed.url == HTTPBin.base + "/get")
            #expect(replayed.body == recorded.body)
            #expect(records.map(\.outcome.kind) == [.replayed])
            #expect(records.first?.outcome.redirects.count == 2)
        }

        @Test(
            "a recorded redirect to what the policy now blocks is refused under replay, as it is live",
            arguments: CallerStyle.allCases)
        func blockedHop(_ style: CallerStyle) async throws {
            let (har, request, _) = try await Self.recordedRedirects(style)
            let blocking = "[block]\nhop /relative-redirect/\n[record]\nall .\n"
            let live = try AuditedSession(rules: blocking)
            let refusedLive = await style.run(request, on: live.session)
            let liveRecords = try await live.finish()
            let replaying = try AuditedSession(rules: blocking) { $0.recording = .replay(har, onMiss: .fail) }
            let refused = await style.run(request, on: replaying.session)
            let records = try await replaying.finish()
            #expect(refusedLive.errorCode != nil)
            #expect(refused.errorCode == refusedLive.errorCode)
            #expect(refused.status == nil)
            #expect(records.map(\.outcome.kind) == liveRecords.map(\.outcome.kind))
            #expect(records.map(\.outcome.kind) == [.blocked])
        }

        @Test("a download task under replay with onMiss .fail fails with a recording error and is not sent")
        func downloadUnderReplay() async throws {
            let har = Self.newRecordingPath()
            let recording = try Self.session(.record(har))
            _ = await CallerStyle.async.run(URLRequest(url: HTTPBin.url(.get(query: "a=1"))), on: recording.session)
            _ = try await recording.finish()
            let marker = "app-download-\(UUID().uuidString)"
            let replaying = try Self.session(.replay(har, onMiss: .fail))
            var failure: URLError?
            do {
                _ = try await replaying.session.download(for: URLRequest(url: HTTPBin.url(.anything(marker))))
            } catch let error as URLError {
                failure = error
            }
            let records = try await replaying.finish()
            #expect(
                failure?.localizedDescription.contains("a download task cannot be answered from a recording") == true)
            #expect(records.map(\.outcome.kind) == [.failure])
            #expect(try accessLog("HTTPBIN_ACCESS_LOG", count: marker) == 0)
        }

        @Test("a negative replay speed is a clear error when the auditor is made")
        func negativeSpeed() throws {
            var configuration = AuditorConfiguration()
            configuration.recording = .replay("/nonexistent/x.har", onMiss: .fail, speed: -1)
            #expect(throws: RequestAuditError.recording("replay speed: expected 0 or more, got -1.0")) {
                try Auditor(policy: Policy(parsing: "", file: "p.rules"), configuration: configuration)
            }
        }

        @Test("a recording that cannot be read is a clear error when the auditor is made")
        func unreadable() throws {
            var configuration = AuditorConfiguration()
            configuration.recording = .replay("/nonexistent/x.har", onMiss: .fail)
            #expect(
                throws: RequestAuditError.recording(
                    "cannot open the recording /nonexistent/x.har: no such file")
            ) {
                try Auditor(policy: Policy(parsing: "", file: "p.rules"), configuration: configuration)
            }
        }
    }
}
