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

        @Test(
            "a session recorded in an app replays in every caller style, byte for byte, without the servers",
            arguments: CallerStyle.allCases)
        func recordAndReplay(_ style: CallerStyle) async throws {
            let har = NSTemporaryDirectory() + "app-\(UUID().uuidString).har"
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
            let har = NSTemporaryDirectory() + "app-\(UUID().uuidString).har"
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

        @Test("a request the recording has no response for gets 504 with a JSON body naming it")
        func miss() async throws {
            let har = NSTemporaryDirectory() + "app-\(UUID().uuidString).har"
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

        @Test("a query parameter named in ignoring does not stop a match; without it the request is a miss")
        func ignoredParameters() async throws {
            let har = NSTemporaryDirectory() + "app-\(UUID().uuidString).har"
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
            let har = NSTemporaryDirectory() + "app-\(UUID().uuidString).har"
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
                    "cannot open the recording /nonexistent/x.har: cannot read the file")
            ) {
                try Auditor(policy: Policy(parsing: "", file: "p.rules"), configuration: configuration)
            }
        }
    }
}
