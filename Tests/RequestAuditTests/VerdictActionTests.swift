import AuditReport
import Foundation
import RequestAudit
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension InterceptionTests {
    @Suite struct VerdictActions {
        static let rules = """
            [block] message="No rivals"
            rival   /anything/rival-
            [redirect $1/anything/new-$2] message="Moved"
            moved   ^(http://127\\.0\\.0\\.1:[0-9]+)/anything/old-([a-z0-9-]+)
            [warn] message="Careful"
            risky   /anything/risky-
            [record] field=path
            api     ^/anything/api/
            [record] field=method
            writes  ^POST$
            """

        @Test("block fails the task with a recognisable URLError and nothing reaches the server")
        func block() async throws {
            let audited = try AuditedSession(rules: Self.rules)
            let path = "/anything/rival-\(UUID().uuidString)"
            let url = HTTPBin.url(HTTPBin.base + path)
            var caught: URLError?
            do {
                _ = try await audited.session.data(from: url)
            } catch let error as URLError {
                caught = error
            }
            let records = try await audited.finish()
            #expect(caught?.code == RequestAuditError.refusalCode)
            #expect(
                caught?.requestAuditError == .blocked(rule: "test/rival", message: "No rivals", url: url.absoluteString)
            )
            #expect(try await HTTPBin.received(pathPrefix: path) == false)
            #expect(records.map(\.outcome.kind) == [.blocked])
            #expect(records.first?.decision.rule == "test/rival")
        }

        @Test("a shadow policy that would block is never enforced in an app: the request goes through, the record says")
        func shadowPolicy() async throws {
            let shadow = try Policy(parsing: "[block] message=\"Stricter\"\nstrict /anything/shadowed", file: "s.rules")
            let audited = try AuditedSession { $0.shadowPolicy = shadow }
            let (data, response) = try await audited.session.data(
                from: HTTPBin.url(HTTPBin.base + "/anything/shadowed"))
            let records = try await audited.finish()
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(!data.isEmpty)
            #expect(records.map(\.decision.verdict) == [.pass])
            #expect(records.first?.decision.shadow == DecisionSummary(verdict: .block, rule: "s/strict"))
        }

        @Test("redirect sends the request to the target instead, and the event records both")
        func redirect() async throws {
            let audited = try AuditedSession(rules: Self.rules)
            let token = UUID().uuidString.lowercased()
            let (data, response) = try await audited.session.data(from: HTTPBin.url(.anything("old-\(token)")))
            let records = try await audited.finish()
            #expect(response.url?.path == "/anything/new-\(token)")
            #expect(String(decoding: data, as: UTF8.self).contains("/anything/new-\(token)"))
            #expect(try await HTTPBin.received(pathPrefix: "/anything/old-\(token)") == false)
            let record = try #require(records.first)
            #expect(record.request.url.hasSuffix("/anything/old-\(token)"))
            #expect(record.decision.redirect?.hasSuffix("/anything/new-\(token)") == true)
            #expect(record.outcome.forwardedURL?.hasSuffix("/anything/new-\(token)") == true)
        }

        @Test("warn asks the handler, which can let the request proceed")
        func warnProceeds() async throws {
            let audited = try AuditedSession(rules: Self.rules) { configuration in
                configuration.defaultWarningDecision = .cancel
                configuration.warningHandler = { warning in warning.rule == "test/risky" ? .proceed : .cancel }
            }
            let (_, response) = try await audited.session.data(from: HTTPBin.url(.anything("risky-1")))
            let records = try await audited.finish()
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(records.first?.warning == WarningResolution(decision: .proceed, decidedBy: .handler))
        }

        @Test("warn asks the handler, which can cancel: the task fails and nothing is sent")
        func warnCancelled() async throws {
            let audited = try AuditedSession(rules: Self.rules) { configuration in
                configuration.warningHandler = { _ in .cancel }
            }
            let path = "/anything/risky-\(UUID().uuidString)"
            var caught: URLError?
            do { _ = try await audited.session.data(from: HTTPBin.url(HTTPBin.base + path)) } catch let error
                as URLError
            { caught = error }
            let records = try await audited.finish()
            if case .warningDeclined(let rule, let message, _) = caught?.requestAuditError {
                #expect(rule == "test/risky")
                #expect(message == "Careful")
            } else {
                Issue.record("expected a declined warning, got \(String(describing: caught))")
            }
            #expect(try await HTTPBin.received(pathPrefix: path) == false)
            #expect(records.first?.outcome.kind == .warningDeclined)
            #expect(records.first?.warning == WarningResolution(decision: .cancel, decidedBy: .handler))
        }

        @Test("a handler that does not answer in time gets the configured default")
        func warnTimeout() async throws {
            let audited = try AuditedSession(rules: Self.rules) { configuration in
                configuration.warningTimeout = .milliseconds(200)
                configuration.defaultWarningDecision = .cancel
                configuration.warningHandler = { _ in
                    try? await Task.sleep(for: .seconds(30))
                    return .proceed
                }
            }
            let started = ContinuousClock.now
            let result = await CallerStyle.async.run(
                URLRequest(url: HTTPBin.url(.anything("risky-slow"))), on: audited.session)
            let records = try await audited.finish()
            #expect(result.errorCode == RequestAuditError.refusalCode.rawValue)
            #expect(ContinuousClock.now - started < .seconds(10))
            #expect(records.first?.warning == WarningResolution(decision: .cancel, decidedBy: .timeout))
        }

        @Test("without a handler the default decision applies at once")
        func warnDefault() async throws {
            let audited = try AuditedSession(rules: Self.rules)
            let (_, response) = try await audited.session.data(from: HTTPBin.url(.anything("risky-2")))
            let records = try await audited.finish()
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(records.first?.warning == WarningResolution(decision: .proceed, decidedBy: .default))
        }

        @Test("record rules count per rule and category, and pass requests unchanged")
        func recordStatistics() async throws {
            let audited = try AuditedSession(rules: Self.rules)
            for index in 0..<3 {
                var request = URLRequest(url: HTTPBin.url(.anything("api/items/\(index)")))
                request.httpMethod = index == 0 ? "POST" : "GET"
                request.httpBody = index == 0 ? Data("x=1".utf8) : nil
                let (_, response) = try await audited.session.data(for: request)
                #expect((response as? HTTPURLResponse)?.statusCode == 200)
            }
            _ = try await audited.session.data(from: HTTPBin.url(.get(query: "plain=1")))
            let statistics = audited.auditor.statistics
            _ = try await audited.finish()
            #expect(statistics.requests == 4)
            #expect(statistics.recordedByRule == ["test/api": 3, "test/writes": 1])
            #expect(statistics.recordedByCategory == ["test": 4])
            #expect(statistics.verdicts == [.pass: 4])
        }

        @Test("a redirect hop to a blocked URL is refused like the URL itself")
        func blockedRedirectHop() async throws {
            let audited = try AuditedSession(rules: "[block]\nno-get ^http://127\\.0\\.0\\.1:[0-9]+/get")
            let result = await CallerStyle.async.run(
                URLRequest(url: HTTPBin.url(.redirect(count: 2))), on: audited.session)
            let records = try await audited.finish()
            #expect(result.errorCode == RequestAuditError.refusalCode.rawValue)
            #expect(records.first?.outcome.kind == .blocked)
        }
    }
}
