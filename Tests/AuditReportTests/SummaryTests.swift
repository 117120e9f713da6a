import AuditPolicy
import AuditReport
import Foundation
import Testing

/// A deterministic log: `count` records over three hours with known verdicts, hosts, rules,
/// decision times and outcomes; the expected numbers are computed from the same table, separately.
struct KnownLog {
    struct Row {
        let minute: Int
        let verdict: Verdict.Action
        let host: String
        let rule: String?
        let category: String?
        let recorded: [String]
        let nanoseconds: UInt64
        let outcome: OutcomeSnapshot.Kind
    }

    let rows: [Row]

    init(count: Int) {
        let verdicts: [Verdict.Action] = [.pass, .pass, .pass, .block, .warn, .allow, .redirect]
        rows = (0..<count).map { index in
            let verdict = verdicts[index % verdicts.count]
            let rule: String? =
                verdict == .pass ? nil : "\(verdict == .warn ? "danger" : "competitor")/\(verdict.rawValue)-rule"
            return Row(
                minute: (index * 7) % 170, verdict: verdict, host: "host\(index % 5).test",
                rule: rule, category: rule.map { String($0.split(separator: "/")[0]) },
                recorded: index.isMultiple(of: 3) ? ["statistics/api"] : [],
                nanoseconds: UInt64(100 + index * 10), outcome: index.isMultiple(of: 11) ? .failure : .response
            )
        }
    }

    func records() -> [AuditRecord] {
        rows.enumerated().map { index, row in
            let url = "https://\(row.host)/item/\(index)"
            var decision = DecisionSnapshot(Verdict(action: row.verdict), nanoseconds: row.nanoseconds)
            decision.verdict = row.verdict
            decision.rule = row.rule
            decision.category = row.category
            decision.recorded = row.recorded
            decision.recordedCategories = row.recorded.map { _ in "statistics" }
            decision.redirect = row.verdict == .redirect ? "https://ours.test/item/\(index % 2)" : nil
            let error =
                row.outcome == .failure
                ? OutcomeSnapshot.ErrorSnapshot(domain: "NSURLErrorDomain", code: -1001, description: "timed out") : nil
            return AuditRecord(
                id: UUID(), time: Date(timeIntervalSince1970: 1_800_000_000 + Double(row.minute * 60)),
                request: RequestSnapshot(method: "GET", url: url, host: row.host, headers: []), decision: decision,
                outcome: OutcomeSnapshot(
                    kind: row.outcome, status: row.outcome == .response ? 200 : nil, durationMilliseconds: 1,
                    error: error)
            )
        }
    }

    func write(to path: String, gzip: Bool = false) throws {
        let text = try records().map { try $0.jsonLine() }.joined(separator: "\n") + "\n"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        if gzip {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = ["gzip", "-f", path]
            try process.run()
            process.waitUntilExit()
        }
    }
}

@Suite struct SummaryTests {
    @Test("totals, categories, rules, hosts, statistics, outcomes and errors match an independent count")
    func aggregation() throws {
        let known = KnownLog(count: 700)
        var builder = SummaryBuilder()
        for record in known.records() { builder.add(record) }
        let report = builder.build(logs: ["known.jsonl"])
        #expect(report.totalRequests == 700)
        for verdict in Verdict.Action.allCases {
            #expect(report.verdicts[verdict.rawValue] == known.rows.count { $0.verdict == verdict })
        }
        let danger = report.categories.first { $0.category == "danger" }
        #expect(danger?.total == known.rows.count { $0.category == "danger" })
        #expect(report.categories.map(\.total).reduce(0, +) == known.rows.count { $0.rule != nil })
        let blockRule = report.rules.first { $0.rule == "competitor/block-rule" }
        #expect(blockRule?.decided == known.rows.count { $0.verdict == .block })
        #expect(report.recordedByRule == ["statistics/api": known.rows.count { !$0.recorded.isEmpty }])
        #expect(report.recordedByCategory == ["statistics": known.rows.count { !$0.recorded.isEmpty }])
        let blockedHosts = Dictionary(grouping: known.rows.filter { $0.verdict == .block }, by: \.host).mapValues(
            \.count)
        #expect(report.topHostsByVerdict["block"]?.map(\.count) == blockedHosts.values.sorted(by: >))
        // Every redirect source URL is distinct, so the top pairs are ten pairs seen once each.
        #expect(report.redirects.count == min(SummaryBuilder.topCount, known.rows.count { $0.verdict == .redirect }))
        #expect(report.redirects.allSatisfy { $0.count == 1 && $0.to.hasPrefix("https://ours.test/item/") })
        #expect(
            report.outcomes == [
                "failure": known.rows.count { $0.outcome == .failure },
                "response": known.rows.count { $0.outcome == .response },
            ])
        #expect(report.errors.map(\.count) == [known.rows.count { $0.outcome == .failure }])
        #expect(report.firstRequest == Date(timeIntervalSince1970: 1_800_000_000))
        let lastMinute = known.rows.map(\.minute).max() ?? 0
        #expect(report.lastRequest == Date(timeIntervalSince1970: 1_800_000_000 + Double(lastMinute * 60)))
    }

    @Test("the timeline counts every request once, per minute for a span under three hours")
    func timeline() {
        let known = KnownLog(count: 700)
        var builder = SummaryBuilder()
        for record in known.records() { builder.add(record) }
        let report = builder.build(logs: [])
        #expect(report.timelineBucket == "minute")
        #expect(report.timeline.count == 170)
        #expect(report.timeline.map { $0.verdicts.values.reduce(0, +) }.reduce(0, +) == 700)
        let minuteFive = known.rows.count { $0.minute == 5 }
        #expect(report.timeline[5].verdicts.values.reduce(0, +) == minuteFive)
    }

    @Test("decision-time percentiles are within 1/32 of the exact nearest-rank values; max is exact")
    func percentiles() {
        let known = KnownLog(count: 700)
        var builder = SummaryBuilder()
        for record in known.records() { builder.add(record) }
        let time = builder.build(logs: []).decisionTime
        let sorted = known.rows.map(\.nanoseconds).sorted()
        func exact(_ fraction: Double) -> Double {
            Double(sorted[Int((fraction * Double(sorted.count)).rounded(.up)) - 1])
        }
        #expect(time.count == 700)
        #expect(time.max == sorted.last)
        for (value, fraction) in [(time.p50, 0.5), (time.p90, 0.9), (time.p99, 0.99)] {
            #expect(
                abs(Double(value) - exact(fraction)) <= exact(fraction) / 32,
                "p\(Int(fraction * 100)) = \(value), exact \(exact(fraction))")
        }
    }

    @Test("--since and --until keep since <= time < until")
    func timeFilter() {
        let known = KnownLog(count: 700)
        let since = Date(timeIntervalSince1970: 1_800_000_000 + 30 * 60)
        let until = Date(timeIntervalSince1970: 1_800_000_000 + 60 * 60)
        var builder = SummaryBuilder(since: since, until: until)
        for record in known.records() { builder.add(record) }
        let report = builder.build(logs: [])
        #expect(report.totalRequests == known.rows.count { $0.minute >= 30 && $0.minute < 60 })
        #expect(report.since == since)
        #expect(report.until == until)
    }

    @Test("gzip-compressed logs read the same as plain ones, torn last lines are counted")
    func gzipAndTornLines() throws {
        let known = KnownLog(count: 120)
        let plain = try temporaryLogPath()
        try known.write(to: plain)
        let compressed = try temporaryLogPath()
        try known.write(to: compressed, gzip: true)
        let torn = try temporaryLogPath()
        try known.write(to: torn)
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: torn))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(#"{"schema":1,"id":"0"#.utf8))
        try handle.close()

        let fromPlain = try ReportWriter().summarize([plain])
        let fromGzip = try ReportWriter().summarize([compressed + ".gz"])
        let fromTorn = try ReportWriter().summarize([torn])
        #expect(fromGzip.totalRequests == 120)
        #expect(fromGzip.verdicts == fromPlain.verdicts)
        #expect(fromGzip.timeline == fromPlain.timeline)
        #expect(fromTorn.totalRequests == 120)
        #expect(fromTorn.skippedLines == 1)
        #expect(fromTorn.tornLines == 1)
    }

    @Test("a file that is not gzip is a clear error")
    func badGzip() throws {
        let path = try temporaryLogPath() + ".gz"
        try Data("plain text".utf8).write(to: URL(fileURLWithPath: path))
        #expect(throws: AuditLogError.cannotOpen(path: path, reason: "not a valid gzip file")) {
            try ReportWriter().summarize([path])
        }
    }

    @Test(
        "builders of consecutive runs of records, merged in order, give the report of one builder",
        arguments: [[0], [350], [1, 699], [100, 200, 300, 650]]
    )
    func mergedRunsMatchOneBuilder(cuts: [Int]) {
        let records = KnownLog(count: 700).records()
        let since = records[50].time
        let until = records[600].time
        var whole = SummaryBuilder(since: since, until: until)
        for record in records { whole.add(record) }
        let bounds = [0] + cuts + [records.count]
        var merged = SummaryBuilder(since: since, until: until)
        for (start, end) in zip(bounds, bounds.dropFirst()) {
            var run = SummaryBuilder(since: since, until: until)
            for record in records[start..<end] { run.add(record) }
            merged.merge(run)
        }
        #expect(merged.build(logs: ["known.jsonl"]) == whole.build(logs: ["known.jsonl"]))
    }

    @Test("merging keeps the first description seen for an error, as adding one by one does")
    func mergeKeepsFirstErrorDescription() {
        var records = KnownLog(count: 22).records().filter { $0.outcome.error != nil }
        records[1].outcome.error?.description = "a later description"
        var first = SummaryBuilder()
        first.add(records[0])
        var second = SummaryBuilder()
        second.add(records[1])
        first.merge(second)
        let errors = first.build(logs: []).errors
        #expect(errors.map(\.description) == ["timed out"])
        #expect(errors.map(\.count) == [2])
    }

    @Test("a log of many megabytes, counted on every core, gives the report of adding its records in order")
    func parallelSummaryMatchesSerial() throws {
        let known = KnownLog(count: 20_000)
        let path = try temporaryLogPath()
        try known.write(to: path)
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0 > 4 << 20)
        var serial = SummaryBuilder()
        for record in known.records() { serial.add(record) }
        serial.skipped([])
        #expect(try ReportWriter().summarize([path]) == serial.build(logs: [path]))
    }

    @Test("with a policy, rules that never matched are listed")
    func rulesWithoutHits() throws {
        let policy = try Policy(parsing: "[block]\nblock-rule x\nidle y", file: "competitor.rules")
        var builder = SummaryBuilder()
        for record in KnownLog(count: 50).records() { builder.add(record) }
        #expect(builder.build(logs: [], policy: policy).rulesWithoutHits == ["competitor/idle"])
    }
}

/// Golden files: the three formats of a fixed report, compared byte for byte.
/// Regenerate deliberately with `UPDATE_GOLDEN=1 make test`.
@Suite struct GoldenReportTests {
    static let folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
        "Fixtures/golden")

    static func report() -> SummaryReport {
        var builder = SummaryBuilder()
        for record in KnownLog(count: 70).records() { builder.add(record) }
        builder.skipped([])
        return builder.build(logs: ["known.jsonl"])
    }

    @Test("each format renders the fixed report exactly as its golden file", arguments: ReportWriter.Format.allCases)
    func golden(_ format: ReportWriter.Format) throws {
        let renderer: any ReportRenderer =
            switch format {
            case .json: JSONReportRenderer()
            case .md: MarkdownReportRenderer()
            case .html: HTMLReportRenderer()
            }
        let text = try renderer.render(Self.report())
        let golden = Self.folder.appendingPathComponent(renderer.fileName)
        if ProcessInfo.processInfo.environment["UPDATE_GOLDEN"] == "1" {
            try Data(text.utf8).write(to: golden)
        }
        #expect(text == (try String(contentsOf: golden, encoding: .utf8)))
    }

    @Test("the JSON report decodes back to the same report")
    func jsonRoundTrip() throws {
        let report = Self.report()
        let text = try JSONReportRenderer().render(report)
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            return try Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text)
        }
        #expect(try decoder.decode(SummaryReport.self, from: Data(text.utf8)) == report)
    }

    @Test("the HTML report is self-contained: no external scripts, styles or images")
    func htmlSelfContained() throws {
        let html = try HTMLReportRenderer().render(Self.report())
        #expect(
            !html.contains("src=") && !html.contains("href=") && !html.contains("http://") && !html.contains("@import"))
        #expect(html.components(separatedBy: "<svg").count - 1 == 3)
    }
}

@Suite struct HostlessSummaryTests {
    @Test("a request without a host is counted under '(no host)' in the host tables, not under an empty name")
    func noHost() throws {
        func record(_ url: String, host: String) -> AuditRecord {
            AuditRecord(
                id: UUID(), time: Date(timeIntervalSince1970: 1_800_000_000),
                request: RequestSnapshot(method: "GET", url: url, host: host, headers: []),
                decision: DecisionSnapshot(Verdict(action: .pass), nanoseconds: 100),
                outcome: OutcomeSnapshot(kind: .authz, status: 400, durationMilliseconds: 1))
        }
        var builder = SummaryBuilder()
        builder.add(record("/admin", host: ""))
        builder.add(record("/x", host: ""))
        builder.add(record("https://a.test/", host: "a.test"))
        let report = builder.build(logs: ["a.jsonl"])
        #expect(report.topHostsByVerdict["pass"]?.map(\.name) == ["(no host)", "a.test"])
        #expect(try MarkdownReportRenderer().render(report).contains("- **pass**: (no host) (2), a.test (1)"))
    }
}

@Suite struct ShadowSummaryTests {
    @Test("records with a shadow decision are counted by live → shadow verdict and rule, and rendered")
    func shadowDifferences() throws {
        func record(_ live: Verdict.Action, shadow: DecisionSummary?) -> AuditRecord {
            var decision = DecisionSnapshot(Verdict(action: live), nanoseconds: 100)
            decision.shadow = shadow
            return AuditRecord(
                id: UUID(), time: Date(timeIntervalSince1970: 1_800_000_000),
                request: RequestSnapshot(method: "GET", url: "https://a.test/", host: "a.test", headers: []),
                decision: decision, outcome: OutcomeSnapshot(kind: .response, status: 200, durationMilliseconds: 1))
        }
        var builder = SummaryBuilder()
        for _ in 0..<3 { builder.add(record(.pass, shadow: DecisionSummary(verdict: .block, rule: "s/new-block"))) }
        builder.add(record(.block, shadow: DecisionSummary(verdict: .pass)))
        builder.add(record(.pass, shadow: nil))
        let report = builder.build(logs: ["a.jsonl"])
        let markdown = try MarkdownReportRenderer().render(report)
        #expect(
            report.shadowDifferences == [
                SummaryReport.ShadowDifference(live: "pass", shadow: "block", rule: "s/new-block", count: 3),
                SummaryReport.ShadowDifference(live: "block", shadow: "pass", rule: nil, count: 1),
            ])
        #expect(markdown.contains("## Shadow differences"))
        #expect(markdown.contains("| pass | block | s/new-block | 3 |"))
        #expect(SummaryBuilder().build(logs: []).shadowDifferences == nil)
    }
}
