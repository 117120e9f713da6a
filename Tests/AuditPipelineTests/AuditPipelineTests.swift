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
        [record]
        api ^https://api\\.
        """

    /// A pipeline for `rules`, logging to a new file in the temporary folder.
    static func loggingPipeline() throws -> (AuditPipeline, URL) {
        let log = FileManager.default.temporaryDirectory.appendingPathComponent("pipeline-\(UUID().uuidString).jsonl")
        var configuration = PipelineConfiguration()
        configuration.logPath = log.path
        return (try AuditPipeline(policy: Policy(parsing: rules, file: "p.rules"), configuration: configuration), log)
    }

    @Test("a decision is counted and published once, and its finish builds, publishes and logs one record")
    func oneDecisionOneRecord() async throws {
        let (pipeline, log) = try Self.loggingPipeline()
        defer { try? FileManager.default.removeItem(at: log) }
        let events = pipeline.events()
        let decision = pipeline.decide(
            AuditRequest(method: "GET", url: "https://api.test/v1?token=abc"), bodyBytes: nil)
        #expect(pipeline.inFlightCount == 1)
        let record = try pipeline.finish(
            decision, warning: nil,
            outcome: OutcomeSnapshot(kind: .response, status: 200, bytes: 5, durationMilliseconds: 1))
        try await pipeline.shutdown()
        var seen: [AuditEvent] = []
        for await event in events { seen.append(event) }
        let logged = try AuditLogReader.read(atPath: log.path).records
        #expect(pipeline.statistics.requests == 1)
        #expect(pipeline.statistics.recordedByRule == ["p/api": 1])
        #expect(pipeline.inFlightCount == 0)
        #expect(seen.map(\.requestID) == [decision.id, decision.id])
        #expect(logged == [record])
        #expect(record.request.url == "https://api.test/v1?token=REDACTED-\(Redaction.default.fingerprint("abc"))")
    }

    @Test("a warning without a handler takes the configured default, decided by default")
    func warningDefault() async throws {
        var configuration = PipelineConfiguration()
        configuration.defaultWarningDecision = .cancel
        let pipeline = try AuditPipeline(
            policy: Policy(parsing: Self.rules, file: "p.rules"), configuration: configuration)
        let decision = pipeline.decide(AuditRequest(method: "GET", url: "https://careful.test/"), bodyBytes: nil)
        let resolution = await pipeline.resolveWarning(decision)
        try pipeline.finish(
            decision, warning: resolution, outcome: OutcomeSnapshot(kind: .warningDeclined, durationMilliseconds: 0))
        #expect(decision.verdict.action == .warn)
        #expect(resolution == WarningResolution(decision: .cancel, decidedBy: .default))
    }

    @Test(
        "a warning the client acknowledged by its rule id proceeds, decided by acknowledgement; others take the fallback"
    )
    func warningAcknowledged() throws {
        let pipeline = try AuditPipeline(policy: Policy(parsing: Self.rules, file: "p.rules"))
        let decision = pipeline.decide(AuditRequest(method: "GET", url: "https://careful.test/"), bodyBytes: nil)
        #expect(
            pipeline.resolveWarning(decision, acknowledgements: ["p/careful"])
                == WarningResolution(decision: .proceed, decidedBy: .acknowledged))
        #expect(
            pipeline.resolveWarning(decision, acknowledgements: ["p/other"], fallback: .cancel)
                == WarningResolution(decision: .cancel, decidedBy: .default))
        try pipeline.finish(decision, warning: nil, outcome: OutcomeSnapshot(kind: .cancelled, durationMilliseconds: 0))
    }

    @Test("a shadow policy is decided beside the live one: its decision is recorded when it differs, never enforced")
    func shadowPolicy() async throws {
        var configuration = PipelineConfiguration()
        configuration.shadowPolicy = try Policy(
            parsing: "[block] message=\"No APIs\"\nno-api ^https://api\\.\n[record]\napi ^https://api\\.",
            file: "s.rules")
        let pipeline = try AuditPipeline(
            policy: Policy(parsing: Self.rules, file: "p.rules"), configuration: configuration)
        let differs = pipeline.decide(AuditRequest(method: "GET", url: "https://api.test/v1"), bodyBytes: nil)
        let same = pipeline.decide(AuditRequest(method: "GET", url: "https://rival.test/x"), bodyBytes: nil)
        try pipeline.finish(differs, warning: nil, outcome: OutcomeSnapshot(kind: .cancelled, durationMilliseconds: 0))
        try pipeline.finish(same, warning: nil, outcome: OutcomeSnapshot(kind: .blocked, durationMilliseconds: 0))
        #expect(differs.verdict.action == .pass)
        #expect(
            differs.decision.shadow
                == DecisionSummary(verdict: .block, rule: "s/no-api", redirect: nil, recorded: ["s/api"]))
        #expect(same.decision.verdict == .block)
        #expect(same.decision.shadow == DecisionSummary(verdict: .pass))
        pipeline.setShadowPolicy(nil)
        let unshadowed = pipeline.decide(AuditRequest(method: "GET", url: "https://api.test/v1"), bodyBytes: nil)
        try pipeline.finish(
            unshadowed, warning: nil, outcome: OutcomeSnapshot(kind: .cancelled, durationMilliseconds: 0))
        #expect(unshadowed.decision.shadow == nil)
    }

    @Test("a redirect hop is refused under the policy the request was decided by")
    func hopRefusal() throws {
        let pipeline = try AuditPipeline(policy: Policy(parsing: Self.rules, file: "p.rules"))
        let decision = pipeline.decide(AuditRequest(method: "GET", url: "https://api.test/"), bodyBytes: nil)
        let refusal = pipeline.hopRefusal(
            AuditRequest(method: "GET", url: "https://rival.test/x"), policy: decision.policy)
        #expect(refusal?.rule?.id == "p/rival")
        #expect(
            pipeline.hopRefusal(AuditRequest(method: "GET", url: "https://ok.test/"), policy: decision.policy) == nil)
        try pipeline.finish(decision, warning: nil, outcome: OutcomeSnapshot(kind: .cancelled, durationMilliseconds: 0))
    }

    @Test(
        "a deferred decision is counted and in flight at once, no longer active once its finish is queued; its start and finish are published and logged in order"
    )
    func deferredDecision() async throws {
        let (pipeline, log) = try Self.loggingPipeline()
        defer { try? FileManager.default.removeItem(at: log) }
        let events = pipeline.events()
        let evaluation = pipeline.evaluate(
            AuditRequest(method: "GET", url: "https://api.test/v1?token=abc"), bodyBytes: 3)
        #expect(pipeline.statistics.requests == 0)
        let deferred = pipeline.decideDeferred(evaluation)
        #expect(pipeline.statistics.requests == 1)
        #expect(pipeline.statistics.recordedByRule == ["p/api": 1])
        #expect(pipeline.statistics.recordedByCategory == ["p": 1])
        #expect(pipeline.statistics.verdicts == [.pass: 1])
        #expect(pipeline.inFlightCount == 1)
        #expect(pipeline.activeCount == 1)
        pipeline.finishDeferred(deferred, warning: nil) { decision in
            OutcomeSnapshot(
                kind: .response, status: 200, bytes: 5, durationMilliseconds: 1, forwardedURL: decision.snapshot.url)
        }
        #expect(pipeline.activeCount == 0)
        await pipeline.waitUntilIdle()
        #expect(pipeline.inFlightCount == 0)
        try await pipeline.shutdown()
        var seen: [AuditEvent] = []
        for await event in events { seen.append(event) }
        let logged = try AuditLogReader.read(atPath: log.path).records
        let redacted = "https://api.test/v1?token=REDACTED-\(Redaction.default.fingerprint("abc"))"
        guard case .started(let started) = seen.first, case .finished(let record) = seen.last, seen.count == 2 else {
            Issue.record("expected started then finished, got \(seen)")
            return
        }
        #expect(started.id == record.id)
        #expect(started.request.url == redacted)
        #expect(started.request.bodyBytes == 3)
        #expect(record.outcome.forwardedURL == redacted)
        #expect(record.decision.recorded == ["p/api"])
        #expect(logged == [record])
    }

    @Test("deferred decisions of many requests keep each request's start before its finish")
    func deferredDecisionsInOrder() async throws {
        let pipeline = try AuditPipeline(policy: Policy(parsing: Self.rules, file: "p.rules"))
        let events = pipeline.events(bufferSize: 10_000)
        for number in 0..<1_000 {
            let deferred = pipeline.decideDeferred(
                pipeline.evaluate(AuditRequest(method: "GET", url: "https://rival.test/\(number)"), bodyBytes: nil))
            pipeline.finishDeferred(deferred, warning: nil) { _ in
                OutcomeSnapshot(kind: .blocked, durationMilliseconds: 0)
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
        let unfinished = open.count
        #expect(finished == 1_000)
        #expect(unfinished == 0)
        #expect(pipeline.statistics.verdicts == [.block: 1_000])
    }
}
