import AuditPolicy
import AuditReport
import Foundation
import Testing

@Suite struct CacheSummaryTests {
    /// A record of a GET to `host` that cache rule `rule` matched, ending as `kind` with `bytes`.
    func record(_ host: String, _ rule: String?, _ kind: OutcomeSnapshot.Kind, bytes: Int) -> AuditRecord {
        var decision = DecisionSnapshot(Verdict(action: .pass), nanoseconds: 100)
        decision.cacheRule = rule
        return AuditRecord(
            id: UUID(), time: Date(timeIntervalSince1970: 1_800_000_000),
            request: RequestSnapshot(method: "GET", url: "http://\(host)/x", host: host, headers: []),
            decision: decision,
            outcome: OutcomeSnapshot(kind: kind, status: 200, bytes: bytes, durationMilliseconds: 1))
    }

    var records: [AuditRecord] {
        [
            record("docs.test", "speed/docs", .stored, bytes: 1_000),
            record("docs.test", "speed/docs", .cached, bytes: 1_000),
            record("docs.test", "speed/docs", .cached, bytes: 1_000),
            record("docs.test", "speed/docs", .revalidated, bytes: 1_000),
            record("cdn.test", "speed/cdn", .stale, bytes: 500),
            record("cdn.test", "speed/cdn", .response, bytes: 500),
            record("other.test", nil, .response, bytes: 9_999),
        ]
    }

    @Test("the report counts hits, stores and bytes saved per cache rule and per host")
    func counts() {
        var builder = SummaryBuilder()
        for record in records { builder.add(record) }
        let report = builder.build(logs: ["audit.jsonl"])
        #expect(
            report.cacheByRule == [
                SummaryReport.CacheCount(name: "speed/docs", requests: 4, hits: 3, stored: 1, bytesSaved: 3_000),
                SummaryReport.CacheCount(name: "speed/cdn", requests: 2, hits: 1, stored: 0, bytesSaved: 500),
            ])
        #expect(report.cacheByHost?.map(\.name) == ["docs.test", "cdn.test"])
        #expect(report.cacheByRule?.first?.hitRatio == 0.75)
        #expect(report.outcomes["cached"] == 2)
    }

    @Test("the Markdown report shows the cache tables with hit ratios; without cache rules it has none")
    func markdown() throws {
        var builder = SummaryBuilder()
        for record in records { builder.add(record) }
        let text = try MarkdownReportRenderer().render(builder.build(logs: ["audit.jsonl"]))
        #expect(text.contains("## Cache"))
        #expect(text.contains("| speed/docs | 4 | 3 | 75.0% | 1 | 3000 |"))
        #expect(text.contains("| cdn.test | 2 | 1 | 50.0% | 0 | 500 |"))
        var plain = SummaryBuilder()
        plain.add(records[6])
        #expect(try !MarkdownReportRenderer().render(plain.build(logs: [])).contains("## Cache"))
    }

    @Test("summaries merge their cache counts, as if counted together")
    func merging() {
        var first = SummaryBuilder()
        var second = SummaryBuilder()
        var whole = SummaryBuilder()
        for (index, record) in records.enumerated() {
            if index < 3 { first.add(record) } else { second.add(record) }
            whole.add(record)
        }
        let merged = SummaryMerger.merge([first.build(logs: []), second.build(logs: [])])
        #expect(merged.cacheByRule == whole.build(logs: []).cacheByRule)
        first.merge(second)
        #expect(first.build(logs: []).cacheByHost == whole.build(logs: []).cacheByHost)
    }

    @Test("the cache rule and the new outcome kinds go through the log and back")
    func logRoundTrip() throws {
        let folder = NSTemporaryDirectory() + "cache-log-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = folder + "/audit.jsonl"
        let writer = try AuditLogWriter(path: path)
        for record in records { try writer.append(record) }
        try writer.shutdownAndWait()
        let (read, problems) = try AuditLogReader.read(atPath: path)
        #expect(problems.isEmpty)
        #expect(read.map(\.decision.cacheRule) == records.map(\.decision.cacheRule))
        #expect(read.map(\.outcome.kind) == records.map(\.outcome.kind))
    }
}
