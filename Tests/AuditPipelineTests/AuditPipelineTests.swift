import AuditPipeline
import AuditPolicy
import AuditReport
import Foundation
import Testing

@Suite struct AuditPipelineTests {
    static let rules = """
        [block] message="No rivals"
        rival ^https://rival\\.test/
        [warn] message="Careful"
        careful ^https://careful\\.test/
        [redirect https://mirror.test/$1]
        moved ^https://old\\.test/(.*)
        [respond 200] body="ok"
        health ^https://health\\.test/
        [record]
        api ^https://api\\.
        """

    /// A pipeline for `rules` logging to a new file in the temporary folder, and a subscription to
    /// its events.
    struct Logged {
        let pipeline: AuditPipeline
        let events: AuditEventStream
        let log: URL

        /// Shuts the pipeline down and returns its events and the records of its log (then deleted).
        func ended() async throws -> (events: [AuditEvent], records: [AuditRecord]) {
            defer { try? FileManager.default.removeItem(at: log) }
            try await pipeline.shutdown()
            var seen: [AuditEvent] = []
            for await event in events { seen.append(event) }
            return (seen, try AuditLogReader.read(atPath: log.path).records)
        }
    }

    static func loggingPipeline(_ configure: (inout PipelineConfiguration) -> Void = { _ in }) throws -> Logged {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("pipeline-\(UUID().uuidString).jsonl")
        var configuration = PipelineConfiguration()
        configuration.logPath = log.path
        configure(&configuration)
        let pipeline = try AuditPipeline(policy: Policy(parsing: rules, file: "p.rules"), configuration: configuration)
        return Logged(pipeline: pipeline, events: pipeline.events(), log: log)
    }

    static func request(_ url: String) -> AuditRequest { AuditRequest(method: "GET", url: url) }

    @Test("an admitted request is counted and published once, and its finish builds, publishes and logs one record")
    func oneAdmissionOneRecord() async throws {
        let logged = try Self.loggingPipeline()
        let pipeline = logged.pipeline
        let audited = pipeline.admit(Self.request("https://api.test/v1?token=abc"), bodyBytes: 3)
        #expect(pipeline.statistics.requests == 1)
        #expect(pipeline.statistics.recordedByRule == ["p/api": 1])
        #expect(pipeline.inFlightCount == 1)
        audited.finish(Outcome(.response, status: 200, bytes: 5, destination: .asDecided))
        await pipeline.waitUntilIdle()
        #expect(pipeline.inFlightCount == 0)
        let (seen, records) = try await logged.ended()
        let redacted = "https://api.test/v1?token=REDACTED-\(Redaction.default.fingerprint("abc"))"
        guard case .started(let started) = seen.first, case .finished(let record) = seen.last, seen.count == 2 else {
            Issue.record("expected started then finished, got \(seen)")
            return
        }
        #expect(started.id == audited.id && record.id == audited.id)
        #expect(started.request.bodyBytes == 3)
        #expect(record.request.url == redacted)
        #expect(record.outcome.forwardedURL == redacted)
        #expect(record.outcome.status == 200 && record.outcome.bytes == 5)
        #expect(records == [record])
    }

    /// A URL, what the front-end can carry out, and what it is to do.
    static let admissionExamples: [(url: String, capabilities: FrontEndCapabilities, expected: String)] = [
        ("https://ok.test/", .all, "send"),
        ("https://api.test/", .all, "send"),
        ("https://rival.test/x", .all, "refuse blocked"),
        ("https://careful.test/", .all, "warn"),
        ("https://old.test/a", .all, "send https://mirror.test/a"),
        ("https://old.test/a", [], "refuse redirectUnavailable(target: \"https://mirror.test/a\")"),
        ("https://health.test/", .all, "respond 200"),
        ("https://health.test/", [.redirect], "refuse responseUnavailable"),
    ]

    @Test(
        "each verdict is admitted as what the front-end does; what it cannot carry out is refused",
        arguments: admissionExamples)
    func admissions(_ example: (url: String, capabilities: FrontEndCapabilities, expected: String)) throws {
        let (url, capabilities, expected) = example
        let pipeline = try AuditPipeline(policy: Policy(parsing: Self.rules, file: "p.rules"))
        let audited = pipeline.admit(Self.request(url), bodyBytes: nil, capabilities: capabilities)
        let shown: String =
            switch audited.admission {
            case .send(nil): "send"
            case .send(let target?): "send \(target)"
            case .refuse(let refusal): "refuse \(refusal.reason)"
            case .respond(let response): "respond \(response.status ?? 0)"
            case .warn: "warn"
            }
        #expect(shown == expected)
        audited.finish(Outcome(.cancelled))
    }

    @Test("a refusal names the rule, its message and the recorded URL, and is recorded as blocked")
    func refusal() async throws {
        let logged = try Self.loggingPipeline()
        let pipeline = logged.pipeline
        let audited = pipeline.admit(Self.request("https://rival.test/x"), bodyBytes: nil)
        guard case .refuse(let refusal) = audited.admission else {
            Issue.record("expected a refusal, got \(audited.admission)")
            return
        }
        #expect(refusal == Refusal(.blocked, rule: "p/rival", message: "No rivals", url: "https://rival.test/x"))
        audited.finish(Outcome(refusal.outcomeKind))
        let (_, records) = try await logged.ended()
        #expect(records.map(\.outcome.kind) == [.blocked])
        #expect(records.first?.outcome.forwardedURL == nil)
    }

    @Test("a warning without a handler takes the configured default, decided by default")
    func warningDefault() async throws {
        let logged = try Self.loggingPipeline { $0.defaultWarningDecision = .cancel }
        let pipeline = logged.pipeline
        let audited = pipeline.admit(Self.request("https://careful.test/"), bodyBytes: nil)
        let resolved = await audited.resolveWarning()
        #expect(
            resolved
                == .refuse(
                    Refusal(.warningDeclined, rule: "p/careful", message: "Careful", url: "https://careful.test/")))
        #expect(audited.warning == WarningResolution(decision: .cancel, decidedBy: .default))
        audited.finish(Outcome(.warningDeclined))
        let (_, records) = try await logged.ended()
        #expect(records.first?.warning == WarningResolution(decision: .cancel, decidedBy: .default))
    }

    @Test(
        "a warning the client acknowledged by its rule id proceeds, decided by acknowledgement; others take the fallback"
    )
    func warningAcknowledged() throws {
        let pipeline = try AuditPipeline(policy: Policy(parsing: Self.rules, file: "p.rules"))
        let acknowledged = pipeline.admit(Self.request("https://careful.test/"), bodyBytes: nil)
        #expect(acknowledged.resolveWarning(acknowledgements: ["p/careful"]) == .send(redirectedTo: nil))
        #expect(acknowledged.warning == WarningResolution(decision: .proceed, decidedBy: .acknowledged))
        let other = pipeline.admit(Self.request("https://careful.test/"), bodyBytes: nil)
        guard case .refuse = other.resolveWarning(acknowledgements: ["p/other"], fallback: .cancel) else {
            Issue.record("an unacknowledged warning proceeded")
            return
        }
        #expect(other.warning == WarningResolution(decision: .cancel, decidedBy: .default))
        acknowledged.finish(Outcome(.cancelled))
        other.finish(Outcome(.warningDeclined))
    }

    @Test("a request finished twice has one record: the first outcome")
    func finishedTwice() async throws {
        let logged = try Self.loggingPipeline()
        let pipeline = logged.pipeline
        let audited = pipeline.admit(Self.request("https://ok.test/"), bodyBytes: nil)
        audited.finish(Outcome(.response, status: 200))
        audited.finish(Outcome(.failure))
        let (seen, records) = try await logged.ended()
        #expect(records.map(\.outcome.kind) == [.response])
        #expect(seen.count == 2)
        #expect(pipeline.inFlightCount == 0)
    }

    @Test("a request dropped without a finish is recorded as cancelled, and the pipeline does not wait for it")
    func droppedWithoutFinish() async throws {
        let logged = try Self.loggingPipeline()
        let pipeline = logged.pipeline
        do {
            _ = pipeline.admit(Self.request("https://ok.test/dropped"), bodyBytes: nil)
        }
        let (_, records) = try await logged.ended()
        #expect(records.map(\.outcome.kind) == [.cancelled])
        #expect(records.first?.outcome.error?.description == "the request ended without an outcome")
        #expect(pipeline.inFlightCount == 0)
    }

    @Test("a shadow policy is decided beside the live one: its decision is recorded when it differs, never enforced")
    func shadowPolicy() async throws {
        var configuration = PipelineConfiguration()
        configuration.shadowPolicy = try Policy(
            parsing: "[block] message=\"No APIs\"\nno-api ^https://api\\.\n[record]\napi ^https://api\\.",
            file: "s.rules")
        let pipeline = try AuditPipeline(
            policy: Policy(parsing: Self.rules, file: "p.rules"), configuration: configuration)
        let differs = pipeline.admit(Self.request("https://api.test/v1"), bodyBytes: nil)
        let same = pipeline.admit(Self.request("https://rival.test/x"), bodyBytes: nil)
        #expect(differs.verdict.action == .pass)
        #expect(
            differs.decision.decision.shadow
                == DecisionSummary(verdict: .block, rule: "s/no-api", redirect: nil, recorded: ["s/api"]))
        #expect(same.decision.decision.verdict == .block)
        #expect(same.decision.decision.shadow == DecisionSummary(verdict: .pass))
        pipeline.setShadowPolicy(nil)
        let unshadowed = pipeline.admit(Self.request("https://api.test/v1"), bodyBytes: nil)
        #expect(unshadowed.decision.decision.shadow == nil)
        for audited in [differs, same, unshadowed] { audited.finish(Outcome(.cancelled)) }
    }

    @Test("a redirect hop is refused under the policy the request was decided by")
    func hopRefusal() throws {
        let pipeline = try AuditPipeline(policy: Policy(parsing: Self.rules, file: "p.rules"))
        let audited = pipeline.admit(Self.request("https://api.test/"), bodyBytes: nil)
        let refusal = pipeline.hopRefusal(Self.request("https://rival.test/x"), policy: audited.decision.policy)
        #expect(refusal?.rule?.id == "p/rival")
        #expect(pipeline.hopRefusal(Self.request("https://ok.test/"), policy: audited.decision.policy) == nil)
        audited.finish(Outcome(.cancelled))
    }

    @Test("many requests admitted and finished from several threads each have their start before their finish")
    func startsBeforeFinishes() async throws {
        let pipeline = try AuditPipeline(policy: Policy(parsing: Self.rules, file: "p.rules"))
        let events = pipeline.events(bufferSize: 10_000)
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<4 {
                group.addTask {
                    for number in 0..<250 {
                        let audited = pipeline.admit(
                            Self.request("https://rival.test/\(thread)/\(number)"), bodyBytes: nil)
                        audited.finish(Outcome(.blocked))
                    }
                }
            }
        }
        try await pipeline.shutdown()
        var open: Set<UUID> = []
        var finished = 0
        for await event in events {
            switch event {
            case .started(let started): open.insert(started.id)
            case .finished(let record):
                #expect(open.remove(record.id) != nil, "finished before started: \(record.request.url)")
                finished += 1
            default: Issue.record("unexpected event \(event)")
            }
        }
        #expect(finished == 1_000)
        #expect(open.isEmpty)
        #expect(pipeline.statistics.verdicts == [.block: 1_000])
    }
}
