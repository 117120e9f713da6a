import AuditReport
import Foundation
import Testing

@Suite struct ReportMergeTests {
    /// The summary.json `audit report` writes for `logs` into `folder/name`.
    private func summarize(_ logs: [String], into folder: TemporaryFolder, _ name: String) throws -> SummaryReport {
        let out = folder.url.appendingPathComponent(name).path
        let run = try runBinary(["report"] + logs + ["--out", out, "--policies", "policies"])
        #expect(run.exitCode == 0, "\(run.standardError)")
        let path = out + "/summary.json"
        return try SummaryMerger.summary(from: Data(contentsOf: URL(fileURLWithPath: path)), path: path)
    }

    @Test("merging two machines' summaries gives the counts and percentiles of one report over both logs")
    func mergeMatchesOneReport() throws {
        let folder = try TemporaryFolder([:])
        var logs: [String] = []
        for input in ["browsing-session.har", "requests.txt"] {
            let log = folder.url.appendingPathComponent("\(input).jsonl").path
            let replay = try runBinary([
                "replay", "policies/traffic/\(input)", "--log", log, "--start", "2026-11-20T10:30:00Z",
            ])
            #expect(replay.exitCode == 0)
            logs.append(log)
        }
        _ = try summarize([logs[0]], into: folder, "a")
        _ = try summarize([logs[1]], into: folder, "b")
        let whole = try summarize(logs, into: folder, "whole")
        let out = folder.url.appendingPathComponent("merged").path
        let merge = try runBinary([
            "report", "--merge", folder.url.appendingPathComponent("a/summary.json").path,
            folder.url.appendingPathComponent("b/summary.json").path, "--out", out,
        ])
        #expect(merge.exitCode == 0, "\(merge.standardError)")
        #expect(merge.outputLines.first == "merged 2 summaries")
        #expect(merge.outputLines.contains("104 requests, 2026-11-20 09:00:00 +0000 to 2026-11-20 10:32:20 +0000"))
        let path = out + "/summary.json"
        let merged = try SummaryMerger.summary(from: Data(contentsOf: URL(fileURLWithPath: path)), path: path)

        #expect(merged.totalRequests == whole.totalRequests)
        #expect(merged.verdicts == whole.verdicts)
        #expect(merged.categories == whole.categories)
        #expect(merged.rules == whole.rules)
        #expect(merged.rulesWithoutHits == whole.rulesWithoutHits)
        #expect(merged.recordedByRule == whole.recordedByRule)
        #expect(merged.outcomes == whole.outcomes)
        #expect(merged.errors.map(\.count) == whole.errors.map(\.count))
        #expect(merged.decisionTime == whole.decisionTime)
        #expect(merged.decisionTimeHistogram == whole.decisionTimeHistogram)
        #expect(merged.timeline.reduce(0) { $0 + $1.verdicts.values.reduce(0, +) } == 104)
        // Top lists: each merged count is at most its true count, which is within its error bound.
        for (verdict, hosts) in merged.topHostsByVerdict {
            let truth = Dictionary(
                uniqueKeysWithValues: (whole.topHostsByVerdict[verdict] ?? []).map { ($0.name, $0.count) })
            for host in hosts where truth[host.name] != nil {
                let exact = truth[host.name] ?? 0
                #expect(host.count <= exact && exact <= host.count + (host.errorBound ?? 0), "\(verdict) \(host)")
            }
        }
    }

    @Test("a file that is not a summary is an error naming it")
    func notASummary() throws {
        let folder = try TemporaryFolder(["x.json": "{\"reportSchema\": \"one\"}"])
        let path = folder.url.appendingPathComponent("x.json").path
        let run = try runBinary(["report", "--merge", path, "--out", folder.path])
        #expect(run.exitCode == 1)
        #expect(run.standardError.hasPrefix("\(path): not a summary.json: "))
    }

    @Test("a name missing from a full top list gets that list's smallest count as its error bound")
    func topListBounds() {
        let full = (0..<10).map { SummaryReport.Count(name: "h\($0)", count: 100 - $0) }
        let other = [SummaryReport.Count(name: "new", count: 95), SummaryReport.Count(name: "h0", count: 5)]
        let merged = SummaryMerger.mergeTop([full, other])
        #expect(merged.first == SummaryReport.Count(name: "h0", count: 105))
        #expect(merged.first { $0.name == "new" } == SummaryReport.Count(name: "new", count: 95, errorBound: 91))
        #expect(merged.count == 10)
    }
}
