import AuditReport
import Foundation
import RequestAudit
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension InterceptionTests {
    @Suite struct EventsAndLog {
        @Test("a subscriber sees each request start and finish, with secrets redacted")
        func eventsWithRedaction() async throws {
            let audited = try AuditedSession()
            let events = audited.auditor.events()
            var request = URLRequest(url: HTTPBin.url(.get(query: "q=shoes&token=s3cr3t&api_key=k3y")))
            request.setValue("Bearer very-secret", forHTTPHeaderField: "Authorization")
            request.setValue("session=abc", forHTTPHeaderField: "Cookie")
            request.setValue("kept", forHTTPHeaderField: "X-Trace")
            _ = try await audited.session.data(for: request)
            let records = try await audited.finish()
            var received: [AuditEvent] = []
            for await event in events { received.append(event) }
            #expect(received.count == 2)
            guard case .started(let started) = received.first, case .finished(let finished) = received.last else {
                Issue.record("expected started then finished, got \(received)")
                return
            }
            #expect(started.id == finished.id)
            let hidden = { (secret: String) in "REDACTED-\(Redaction.default.fingerprint(secret))" }
            #expect(started.request.url.hasSuffix("/get?q=shoes&token=\(hidden("s3cr3t"))&api_key=\(hidden("k3y"))"))
            let headers = Dictionary(uniqueKeysWithValues: started.request.headers.map { ($0.name, $0.value) })
            #expect(headers["Authorization"] == "Bearer [\(hidden("very-secret"))]")
            #expect(headers["Cookie"] == "session=[\(hidden("abc"))]")
            #expect(headers["X-Trace"] == "kept")
            let logText = try String(contentsOfFile: audited.logPath, encoding: .utf8)
            #expect(!logText.contains("s3cr3t") && !logText.contains("very-secret") && !logText.contains("session=abc"))
            #expect(records.first == finished)
        }

        @Test("a slow subscriber loses events to its own bounded buffer, is told how many, and slows nobody")
        func slowSubscriber() async throws {
            let audited = try AuditedSession()
            let slow = audited.auditor.events(bufferSize: 3)
            let fast = audited.auditor.events(bufferSize: 1_000)
            for index in 0..<10 { _ = try await audited.session.data(from: HTTPBin.url(.get(query: "n=\(index)"))) }
            let records = try await audited.finish()
            var delivered = 0
            var dropped = 0
            for await event in slow {
                if case .dropped(let count) = event { dropped += count } else { delivered += 1 }
            }
            var fastCount = 0
            for await _ in fast { fastCount += 1 }
            #expect(records.count == 10)
            #expect(fastCount == 20)
            #expect(delivered == 3)
            #expect(delivered + dropped == 20)
        }

        @Test("1,000 concurrent requests give exactly 1,000 complete records in the log and a subscriber")
        func thousandConcurrentRequests() async throws {
            let audited = try AuditedSession()
            let events = audited.auditor.events(bufferSize: 5_000)
            let collector = Task {
                var finished: [UUID] = []
                for await event in events { if case .finished(let record) = event { finished.append(record.id) } }
                return finished
            }
            let session = audited.session
            let statuses = await withTaskGroup(of: Int.self) { group in
                for index in 0..<1_000 {
                    group.addTask {
                        let url = HTTPBin.url(.get(query: "n=\(index)"))
                        let response = try? await session.data(from: url).1
                        return (response as? HTTPURLResponse)?.statusCode ?? -1
                    }
                }
                return await group.reduce(into: [Int]()) { $0.append($1) }
            }
            let records = try await audited.finish()
            let subscriberIDs = await collector.value
            #expect(audited.auditor.inFlightCount == 0)
            #expect(statuses.filter { $0 == 200 }.count == 1_000)
            #expect(records.count == 1_000)
            #expect(Set(records.map(\.id)).count == 1_000)
            #expect(records.allSatisfy { $0.outcome.kind == .response && $0.outcome.status == 200 })
            #expect(Set(records.map(\.request.url)).count == 1_000)
            #expect(subscriberIDs.count == 1_000)
            #expect(Set(subscriberIDs) == Set(records.map(\.id)))
        }

        @Test("redirect chains are recorded with the final URL")
        func redirectChain() async throws {
            let audited = try AuditedSession()
            _ = try await audited.session.data(from: HTTPBin.url(.redirect(count: 3)))
            let records = try await audited.finish()
            let outcome = try #require(records.first?.outcome)
            #expect(outcome.finalURL == HTTPBin.base + "/get")
            #expect(
                outcome.redirects.map { $0.replacingOccurrences(of: HTTPBin.base, with: "") } == [
                    "/relative-redirect/2", "/relative-redirect/1", "/get",
                ])
        }

        @Test("the log file is created readable by its owner only")
        func logPermissions() async throws {
            let audited = try AuditedSession()
            _ = try await audited.session.data(from: HTTPBin.url(.get(query: "p=1")))
            _ = try await audited.finish()
            let attributes = try FileManager.default.attributesOfItem(atPath: audited.logPath)
            #expect((attributes[.posixPermissions] as? Int) == 0o600)
        }

        @Test("only one auditor is installed at a time")
        func oneAuditor() async throws {
            let first = try AuditedSession()
            let second = try Auditor(policy: first.auditor.policy)
            #expect(throws: RequestAuditError.anotherAuditorInstalled) { try second.install() }
            _ = try await first.finish()
            try second.install()
            second.uninstall()
        }

        @Test(
            "uninstalling an auditor that is not the installed one leaves URLSession.shared audited by the installed one"
        )
        func uninstallOfAnotherAuditor() async throws {
            let log = FileManager.default.temporaryDirectory.appendingPathComponent(
                "uninstall-\(UUID().uuidString).jsonl")
            defer { try? FileManager.default.removeItem(at: log) }
            var configuration = AuditorConfiguration()
            configuration.logPath = log.path
            let policy = try Policy(parsing: "[record]\nall .", file: "uninstall.rules")
            let installed = try Auditor(policy: policy, configuration: configuration)
            let earlier = try Auditor(policy: policy)
            try earlier.install()
            earlier.uninstall()
            try installed.install()
            // A late uninstall of the earlier auditor (an old owner going away) changes nothing now.
            earlier.uninstall()
            let (_, response) = try await URLSession.shared.data(from: HTTPBin.url(.get(query: "uninstall=other")))
            try await installed.shutdown()
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            let records = try AuditLogReader.read(atPath: log.path).records
            #expect(records.map(\.request.url) == [HTTPBin.url(.get(query: "uninstall=other")).absoluteString])
        }

        @Test("an uninstalled auditor leaves requests alone and nothing leaks after thousands of requests")
        func noLeaks() async throws {
            let audited = try AuditedSession()
            for batch in 0..<4 {
                await withTaskGroup(of: Void.self) { group in
                    for index in 0..<500 {
                        group.addTask {
                            _ = try? await audited.session.data(from: HTTPBin.url(.get(query: "b=\(batch)&i=\(index)")))
                        }
                    }
                }
            }
            let records = try await audited.finish()
            #expect(audited.auditor.inFlightCount == 0)
            #expect(records.count == 2_000)
            let configured = URLSession(configuration: audited.session.configuration)
            let after = await CallerStyle.async.run(
                URLRequest(url: HTTPBin.url(.get(query: "after=1"))), on: configured)
            #expect(after.status == 200)
            #expect(try AuditLogReader.read(atPath: audited.logPath).records.count == 2_000)
        }
    }
}
