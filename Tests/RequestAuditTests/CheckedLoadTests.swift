import AuditReport
import Foundation
import Testing

@testable import RequestAudit

#if canImport(FoundationNetworking)
    import FoundationNetworking

    extension InterceptionTests {
        /// Data tasks without a delegate (a completion handler): every redirect hop checked, the task
        /// left as it was made, events and records as for any request.
        @Suite struct CheckedLoads {
            /// Runs a completion-handler data task for `request` on `session`, cancelled if it still runs
            /// after `limit` seconds (a test then fails instead of hanging); returns the task and what
            /// its handler got.
            private func run(
                _ request: URLRequest, on session: URLSession, cancelAfter limit: Double = 10
            ) async throws -> (URLSessionDataTask, Exchange) {
                let box = TaskBox()
                let exchange = await withCheckedContinuation { continuation in
                    let task = session.dataTask(with: request) { data, response, error in
                        continuation.resume(returning: Exchange(data: data, response: response, error: error))
                    }
                    box.task = task
                    task.resume()
                    DispatchQueue.global().asyncAfter(deadline: .now() + limit) { [box] in box.task?.cancel() }
                }
                return (try #require(box.task), exchange)
            }

            @Test("a task made without a delegate has none again when its completion handler runs")
            func delegateTakenBack() async throws {
                let audited = try AuditedSession()
                let (task, exchange) = try await run(
                    URLRequest(url: HTTPBin.url(.redirect(count: 2))), on: audited.session)
                let records = try await audited.finish()
                #expect(exchange.status == 200)
                #expect(task.delegate == nil)
                #expect(records.map(\.outcome.kind) == [.response])
                #expect(records.first?.outcome.redirects.count == 2)
            }

            @Test("a refused hop fails a completion handler's task and never reaches the server")
            func refusedHopNotSent() async throws {
                let marker = UUID().uuidString
                let audited = try AuditedSession(rules: "[block]\nhop /anything/hop-\(marker)")
                let request = URLRequest(
                    url: HTTPBin.url(
                        HTTPBin.base + "/redirect-to?url=%2Fanything%2Fhop-\(marker)&status_code=302"))
                let (task, exchange) = try await run(request, on: audited.session)
                let records = try await audited.finish()
                #expect(exchange.errorCode == RequestAuditError.refusalCode.rawValue)
                #expect(exchange.body == nil)
                #expect(task.delegate == nil)
                #expect(try await !HTTPBin.received(pathPrefix: "/anything/hop-\(marker)"))
                #expect(records.map(\.outcome.kind) == [.blocked])
                #expect(records.first?.outcome.status == nil)
            }

            @Test(
                "a request is counted when its completion handler runs; its started and finished events follow in order, with the record the log keeps"
            )
            func countedThenRecorded() async throws {
                let audited = try AuditedSession(rules: "[record]\nbytes /bytes/")
                let events = audited.auditor.events()
                let (_, exchange) = try await run(
                    URLRequest(url: HTTPBin.url(.bytes(2_048))), on: audited.session)
                let statistics = audited.auditor.statistics
                let records = try await audited.finish()
                var seen: [AuditEvent] = []
                for await event in events { seen.append(event) }
                #expect(exchange.status == 200)
                #expect(statistics.requests == 1)
                #expect(statistics.recordedByRule == ["test/bytes": 1])
                guard seen.count == 2, case .started(let started) = seen[0], case .finished(let record) = seen[1] else {
                    Issue.record("expected started then finished, got \(seen)")
                    return
                }
                #expect(started.id == record.id)
                #expect(records == [record])
                #expect(record.outcome.kind == .response)
                #expect(record.outcome.status == 200)
                #expect(record.outcome.bytes == 2_048)
                #expect(record.outcome.forwardedURL == HTTPBin.url(.bytes(2_048)).absoluteString)
            }

            // A platform fact, pinned: FoundationNetworking's challenge step for a task without a
            // delegate never ends, whoever loads the task (docs/platform-notes.md).
            @Test(
                "a completion handler's 401 challenge never completes, directly or audited: the task only ends cancelled"
            )
            func challengeWithoutDelegateHangs() async throws {
                let audited = try AuditedSession()
                let request = URLRequest(url: HTTPBin.url(HTTPBin.base + "/basic-auth/dora/Pa55-word"))
                let (_, direct) = try await run(request, on: audited.direct, cancelAfter: 3)
                let (_, intercepted) = try await run(request, on: audited.session, cancelAfter: 3)
                let records = try await audited.finish()
                #expect(direct.errorCode == URLError.cancelled.rawValue)
                #expect(intercepted == direct)
                #expect(records.map(\.outcome.status) == [401])
            }
        }
    }

    /// The task a completion handler belongs to, kept for the test to read after it ran.
    private final class TaskBox: @unchecked Sendable {
        // @unchecked: written before the task is resumed, read after its handler ran.
        var task: URLSessionDataTask?
    }
#endif
