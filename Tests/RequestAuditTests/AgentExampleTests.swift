import AuditPolicy
import AuditReport
import Foundation
import RequestAudit
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension InterceptionTests {
    /// The README's "Using it in an app" example, run for real: an agent fetches a list of URLs
    /// through `URLSession.shared` with RequestAudit installed globally.
    @Suite struct AgentExample {
        @Test("an agent's fetches are audited end to end: blocked, warned, recorded and logged")
        func agentFetchesThroughAuditedSharedSession() async throws {
            let base = HTTPBin.base
            let policy = try Policy(
                parsing: """
                    [block] message="Trackers are not allowed"
                    tracker   /anything/tracker
                    [warn] message="Sign-in page: ask the user first"
                    sign-in   /anything/login
                    [record] field=path
                    api       ^/anything/api/
                    """, file: "agent.rules")
            let logPath = FileManager.default.temporaryDirectory.appendingPathComponent("agent-\(UUID()).jsonl").path
            var configuration = AuditorConfiguration()
            configuration.logPath = logPath
            configuration.warningHandler = { warning in
                // A real agent would ask its user; this one declines every sign-in page.
                warning.rule == "agent/sign-in" ? .cancel : .proceed
            }
            let auditor = try Auditor(policy: policy, configuration: configuration)
            try auditor.install()  // URLSession.shared and every new session are audited from here on

            let events = auditor.events()
            let watcher = Task {
                var warnings: [String] = []
                for await event in events {
                    if case .started(let started) = event, started.decision.verdict == .warn {
                        warnings.append(started.decision.message ?? "")
                    }
                }
                return warnings
            }

            var outcomes: [String: String] = [:]
            for path in ["/anything/api/v1/items", "/anything/tracker.js", "/anything/login", "/get?page=2"] {
                do {
                    let (data, response) = try await URLSession.shared.data(from: HTTPBin.url(base + path))
                    outcomes[path] =
                        "\((response as? HTTPURLResponse)?.statusCode ?? 0) \(data.count > 0 ? "data" : "empty")"
                } catch let error as URLError {
                    outcomes[path] = error.requestAuditError.map { "refused: \($0)" } ?? "failed: \(error.code)"
                }
            }
            try await auditor.shutdown()  // uninstalls, waits for requests in flight, flushes the log

            #expect(outcomes["/anything/api/v1/items"] == "200 data")
            #expect(outcomes["/get?page=2"] == "200 data")
            #expect(
                outcomes["/anything/tracker.js"]?.hasPrefix(
                    "refused: blocked by RequestAudit rule agent/tracker: Trackers are not allowed") == true)
            #expect(
                outcomes["/anything/login"]?.hasPrefix("refused: warning declined for RequestAudit rule agent/sign-in")
                    == true)
            #expect(await watcher.value == ["Sign-in page: ask the user first"])
            #expect(auditor.statistics.recordedByRule == ["agent/api": 1])
            let records = try AuditLogReader.read(atPath: logPath).records
            // One record a request; a refusal decided on the session queue is written by the bookkeeper,
            // so records of requests made one after another may reach the log in another order.
            let kinds = Dictionary(
                records.map { (URL(string: $0.request.url)?.path ?? "", [$0.outcome.kind]) }, uniquingKeysWith: +)
            #expect(
                kinds == [
                    "/anything/api/v1/items": [.response], "/anything/tracker.js": [.blocked],
                    "/anything/login": [.warningDeclined], "/get": [.response],
                ])
        }

        @Test(
            "platform fact: install() covers URLSession.shared but not a new .default session, which install(into:) covers"
        )
        func globalInstallScope() async throws {
            let auditor = try Auditor(policy: Policy(parsing: "[block]\nall /anything/scope-", file: "scope.rules"))
            try auditor.install()
            let shared = await CallerStyle.async.run(
                URLRequest(url: HTTPBin.url(.anything("scope-shared"))), on: .shared)
            let plain = await CallerStyle.async.run(
                URLRequest(url: HTTPBin.url(.anything("scope-default"))), on: URLSession(configuration: .default))
            let configuration = URLSessionConfiguration.default
            try auditor.install(into: configuration)
            let configured = await CallerStyle.async.run(
                URLRequest(url: HTTPBin.url(.anything("scope-configured"))),
                on: URLSession(configuration: configuration))
            try await auditor.shutdown()
            #expect(shared.errorCode == RequestAuditError.refusalCode.rawValue)
            // FoundationNetworking asks a session's own protocolClasses (the built-in HTTP first) before
            // registered classes: a new .default session is not intercepted by registration.
            #expect(plain.status == 200)
            #expect(configured.errorCode == RequestAuditError.refusalCode.rawValue)
        }
    }
}
