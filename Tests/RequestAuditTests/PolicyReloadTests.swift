import AuditLocking
import AuditPolicy
import AuditReport
import Foundation
import RequestAudit
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A policies folder on disk whose one rule file the test rewrites.
final class PolicyFolder: Sendable {
    let path: String

    init(_ rules: String) throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("ra-policy-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        try write(rules)
    }

    func write(_ rules: String, file: String = "live.rules") throws {
        try Data(rules.utf8).write(to: URL(fileURLWithPath: path + "/" + file), options: .atomic)
    }

    func auditor(configure: (inout AuditorConfiguration) -> Void = { _ in }) throws -> (Auditor, URLSession) {
        var configuration = AuditorConfiguration()
        configure(&configuration)
        let auditor = try Auditor(policy: Policy(directory: path), configuration: configuration)
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        try auditor.install(into: sessionConfiguration)
        return (auditor, URLSession(configuration: sessionConfiguration))
    }
}

/// Waits up to `seconds` for the first event `matching` on `stream`.
func firstEvent(
    on stream: AuditEventStream, within seconds: Double = 10, matching: @escaping @Sendable (AuditEvent) -> Bool
) async -> AuditEvent? {
    await withTaskGroup(of: AuditEvent?.self) { group in
        group.addTask {
            for await event in stream where matching(event) { return event }
            return nil
        }
        group.addTask {
            try? await Task.sleep(for: .seconds(seconds))
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

extension InterceptionTests {
    @Suite struct PolicyReload {
        static let blockAlpha = "[block]\nalpha /anything/alpha\n"
        static let blockBeta = "[block]\nbeta /anything/beta\n"

        func isRefused(_ session: URLSession, _ path: String) async -> Bool {
            do {
                _ = try await session.data(from: HTTPBin.url(.anything(path)))
                return false
            } catch {
                return (error as? URLError)?.requestAuditError != nil
            }
        }

        @Test("a reload puts the new policy in force for the requests that start after it")
        func reloadTakesEffect() async throws {
            let folder = try PolicyFolder(Self.blockAlpha)
            let (auditor, session) = try folder.auditor()
            let events = auditor.events()
            #expect(await isRefused(session, "alpha"))
            #expect(await !isRefused(session, "beta"))

            try folder.write(Self.blockBeta)
            let policy = try auditor.reloadPolicy(from: folder.path)
            #expect(policy.rules.map(\.id) == ["live/beta"])
            #expect(await !isRefused(session, "alpha"))
            #expect(await isRefused(session, "beta"))
            let reloaded = await firstEvent(on: events) {
                if case .policyReloaded = $0 { true } else { false }
            }
            #expect(reloaded != nil)
            #expect(auditor.statistics.reloads == 1)
            try await auditor.shutdown()
        }

        @Test("a reload that fails lint keeps the previous policy and publishes every problem")
        func failedReloadKeepsPolicy() async throws {
            let folder = try PolicyFolder(Self.blockAlpha)
            let (auditor, session) = try folder.auditor()
            let events = auditor.events()
            try folder.write("[block]\nbeta /anything/(beta\n[blok]\n")
            #expect {
                try auditor.reloadPolicy(from: folder.path)
            } throws: { error in
                guard case .policyReload(let failure) = error as? RequestAuditError else { return false }
                return failure.problems.count == 2 && failure.problems[0].hasPrefix(folder.path + "/live.rules:2:")
                    && failure.problems[1].hasPrefix(folder.path + "/live.rules:3:2: error: unknown action 'blok'")
            }
            #expect(auditor.policy.rules.map(\.id) == ["live/alpha"])
            #expect(await isRefused(session, "alpha"))
            let failed = await firstEvent(on: events) {
                if case .policyReloadFailed = $0 { true } else { false }
            }
            guard case .policyReloadFailed(let failure) = failed else {
                Issue.record("no policyReloadFailed event")
                return
            }
            #expect(failure.directory == folder.path)
            #expect(auditor.statistics.failedReloads == 1)
            try await auditor.shutdown()
        }

        @Test("under concurrent load and 30 reloads every request is decided by one whole policy")
        func reloadsUnderLoad() async throws {
            let versionA = "@category a\n[record]\none .\ntwo .\nthree .\n"
            let versionB = "@category b\n[record]\none .\ntwo .\nthree .\n"
            let folder = try PolicyFolder(versionA)
            let logPath = folder.path + "/audit.jsonl"
            let (auditor, session) = try folder.auditor { $0.logPath = logPath }
            let requests = 600
            await withTaskGroup(of: Void.self) { group in
                for number in 0..<requests {
                    group.addTask {
                        // Spread over the reloads' 600 ms, so both versions meet requests however
                        // fast requests are decided.
                        try? await Task.sleep(for: .milliseconds(number % 30 * 20))
                        _ = try? await session.data(from: HTTPBin.url(.get(query: "n=\(number)")))
                    }
                }
                group.addTask {
                    for round in 0..<30 {
                        // Every fifth round writes a broken file: that reload fails and changes nothing.
                        let text =
                            round % 5 == 4 ? "[record]\nbroken (\n" : (round.isMultiple(of: 2) ? versionB : versionA)
                        try? folder.write(text)
                        _ = try? auditor.reloadPolicy(from: folder.path)
                        try? await Task.sleep(for: .milliseconds(20))
                    }
                }
            }
            try await auditor.shutdown()
            let (records, problems) = try AuditLogReader.read(atPath: logPath)
            #expect(problems.isEmpty)
            #expect(records.count == requests)
            let sets = Set(records.map(\.decision.recorded))
            #expect(sets.isSubset(of: [["a/one", "a/two", "a/three"], ["b/one", "b/two", "b/three"]]))
            #expect(sets.count == 2)  // both policies really decided requests
            #expect(auditor.statistics.reloads == 24)
            #expect(auditor.statistics.failedReloads == 6)
        }

        @Test("a request in flight keeps the policy it started with for its redirect hops")
        func inFlightKeepsPolicy() async throws {
            // Version 1 warns about the redirect and lets its hop to /get through; version 2 blocks /get.
            let folder = try PolicyFolder("[warn]\nhop /redirect/\n")
            let reloaded = Locked(false)
            let path = folder.path
            let auditorBox = Locked<Auditor?>(nil)
            let (auditor, session) = try folder.auditor { configuration in
                configuration.warningHandler = { _ in
                    // The request is decided and waiting; switch policies before it is forwarded.
                    try? PolicyFolder.rewrite(path, "[block]\nget /get([?]|$)\n")
                    _ = try? auditorBox.withLock { $0 }?.reloadPolicy(from: path)
                    reloaded.withLock { $0 = true }
                    return .proceed
                }
            }
            auditorBox.withLock { $0 = auditor }
            let (_, response) = try await session.data(from: HTTPBin.url(.redirect(count: 1)))
            #expect(reloaded.withLock { $0 })
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(response.url?.path == "/get")
            do {
                _ = try await session.data(from: HTTPBin.url(.get(query: "")))
                Issue.record("a new request to /get was not blocked under the new policy")
            } catch {
                #expect((error as? URLError)?.requestAuditError != nil)
            }
            try await auditor.shutdown()
        }

        @Test("watching the folder reloads a changed rule file by itself")
        func watchReloads() async throws {
            let folder = try PolicyFolder(Self.blockAlpha)
            let (auditor, session) = try folder.auditor()
            let events = auditor.events()
            auditor.watchPolicies(in: folder.path, every: .milliseconds(50))
            try await Task.sleep(for: .milliseconds(120))
            try folder.write(Self.blockBeta + "# changed\n")
            let reloaded = await firstEvent(on: events) {
                if case .policyReloaded = $0 { true } else { false }
            }
            #expect(reloaded != nil)
            #expect(await isRefused(session, "beta"))
            try await auditor.shutdown()
        }
    }
}

extension PolicyFolder {
    static func rewrite(_ path: String, _ rules: String) throws {
        try Data(rules.utf8).write(to: URL(fileURLWithPath: path + "/live.rules"), options: .atomic)
    }
}
