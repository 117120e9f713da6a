import Foundation
import Testing

@Suite struct ReplayAndReportCommandTests {
    @Test("replaying the bundled traffic and reporting it exercises every bundled rule")
    func mainJob() throws {
        let folder = try TemporaryFolder([:])
        let log = folder.url.appendingPathComponent("audit.jsonl").path
        let replay = try runBinary([
            "replay", "policies/traffic/browsing-session.har", "policies/traffic/requests.txt", "--log", log,
            "--start", "2026-11-20T10:30:00Z",
        ])
        #expect(replay.exitCode == 0)
        #expect(replay.standardError == "")
        #expect(
            replay.outputLines == [
                "replayed 104 requests from 2 files into \(log)",
                "  pass 52 · allow 5 · block 10 · redirect 8 · warn 25 · respond 4",
            ])
        let report = try runBinary(["report", log, "--out", folder.path, "--policies", "policies"])
        #expect(report.exitCode == 0)
        #expect(
            report.outputLines.first
                == "wrote \(folder.path)/summary.json, \(folder.path)/summary.md, \(folder.path)/summary.html")
        #expect(report.outputLines.contains("block              10     9.6 %"))
        let json =
            try JSONSerialization.jsonObject(with: Data(contentsOf: folder.url.appendingPathComponent("summary.json")))
            as? [String: Any]
        #expect(json?["rulesWithoutHits"] as? [String] == [])
        #expect(json?["totalRequests"] as? Int == 104)
        #expect(json?["reportSchema"] as? Int == 1)
    }

    @Test("an audit log replayed under the policy that wrote it gives every record's decision, time and status again")
    func auditLogAsTraffic() throws {
        let folder = try TemporaryFolder([:])
        let first = folder.url.appendingPathComponent("first.jsonl").path
        let second = folder.url.appendingPathComponent("second.jsonl").path
        _ = try runBinary([
            "replay", "policies/traffic/browsing-session.har", "policies/traffic/requests.txt", "--log", first,
            "--start", "2026-11-20T10:30:00Z",
        ])
        let gzip = Process()
        gzip.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        gzip.arguments = ["gzip", "-k", first]
        try gzip.run()
        gzip.waitUntilExit()
        let again = try runBinary(["replay", first + ".gz", "--log", second])
        #expect(again.exitCode == 0)
        #expect(again.standardError == "")
        #expect(
            again.outputLines == [
                "replayed 104 requests from 1 file into \(second)",
                "  pass 52 · allow 5 · block 10 · redirect 8 · warn 25 · respond 4",
            ])
        struct Decided: Equatable {
            let time: String, method: String, url: String, verdict: String, rule: String?, status: Int?
        }
        func decisions(_ path: String) throws -> [Decided] {
            try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map { line in
                let record = try #require(
                    try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
                let request = try #require(record["request"] as? [String: Any])
                let decision = try #require(record["decision"] as? [String: Any])
                let outcome = try #require(record["outcome"] as? [String: Any])
                return Decided(
                    time: try #require(record["time"] as? String), method: try #require(request["method"] as? String),
                    url: try #require(request["url"] as? String), verdict: try #require(decision["verdict"] as? String),
                    rule: decision["rule"] as? String, status: outcome["status"] as? Int)
            }
        }
        let original = try decisions(first)
        #expect(original.count == 104)
        #expect(try decisions(second) == original)
    }

    @Test("an input that cannot be read is named with the reason, as traffic or as a log (exit 1)")
    func unreadableInputs() throws {
        let folder = try TemporaryFolder([:])
        let log = folder.path + "/out.jsonl"
        try FileManager.default.createDirectory(atPath: folder.path + "/folder.har", withIntermediateDirectories: true)
        for (input, message) in [
            (folder.path + "/missing.har", "cannot read the traffic file: no such file"),
            (folder.path + "/missing.txt", "cannot read the traffic file: no such file"),
            (folder.path + "/folder.har", "cannot read the traffic file: it is a folder"),
            (folder.path + "/missing.jsonl", "cannot open the audit log: no such file"),
        ] {
            let run = runInProcess(["replay", input, "--log", log])
            #expect(run.exitCode == 1)
            #expect(run.standardError == "\(input): \(message)\n")
        }
    }

    @Test("an audit log is read with its rotated files, oldest first; a rotated file named alone is read alone")
    func rotatedLogAsTraffic() throws {
        let folder = try TemporaryFolder([:])
        let whole = folder.path + "/whole.jsonl"
        _ = try runBinary([
            "replay", "policies/traffic/browsing-session.har", "policies/traffic/requests.txt", "--log", whole,
        ])
        let lines = try String(contentsOfFile: whole, encoding: .utf8).split(separator: "\n")
        let log = folder.path + "/audit.jsonl"
        try (lines[..<30].joined(separator: "\n") + "\n").write(toFile: log + ".2", atomically: true, encoding: .utf8)
        try (lines[30..<50].joined(separator: "\n") + "\n").write(toFile: log + ".1", atomically: true, encoding: .utf8)
        try (lines[50...].joined(separator: "\n") + "\n").write(toFile: log, atomically: true, encoding: .utf8)
        let all = try runBinary(["replay", log, "--log", folder.path + "/all.jsonl"])
        #expect(all.outputLines.first == "replayed 104 requests from 1 file into \(folder.path)/all.jsonl")
        let replayed = try String(contentsOfFile: folder.path + "/all.jsonl", encoding: .utf8).split(separator: "\n")
        let urls = { (lines: [Substring]) in
            lines.map { line in
                ((try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any])
                    .flatMap { $0["request"] as? [String: Any] }?["url"] as? String
            }
        }
        #expect(urls(replayed) == urls(lines))
        let one = try runBinary(["replay", log + ".1", "--log", folder.path + "/one.jsonl"])
        #expect(one.outputLines.first == "replayed 20 requests from 1 file into \(folder.path)/one.jsonl")
        let diff = try runBinary(["diff", "policies", "policies", log, "--json"])
        #expect(diff.standardError == "0 of 104 requests change\n")
    }

    @Test("a replay refuses to read the log it appends to, however its path is spelled (exit 64)")
    func replayOfItsOwnLog() throws {
        let folder = try TemporaryFolder([:])
        let log = folder.url.appendingPathComponent("audit.jsonl").path
        _ = try runBinary(["replay", "policies/traffic/requests.txt", "--log", log])
        let link = folder.url.appendingPathComponent("link.jsonl").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: log)
        let before = try Data(contentsOf: URL(fileURLWithPath: log))
        for (input, output) in [(log, log), (link, log), (log, link), (folder.path + "/./audit.jsonl", log)] {
            let run = runInProcess(["replay", input, "--log", output])
            #expect(run.exitCode == 64)
            #expect(
                run.standardError.hasPrefix(
                    "Error: \(input) is the log this replay appends to; give --log another file\n"))
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: log)) == before)
    }

    @Test("malformed entries are reported on stderr with their position and counted; the rest is replayed")
    func malformedEntries() throws {
        let folder = try TemporaryFolder([
            "list.txt": "https://www.rivalshop.com/cart\nGET not-a-url\nPOST https://api.example.com/v1/x\n"
        ])
        let log = folder.url.appendingPathComponent("a.jsonl").path
        let run = runInProcess([
            "replay", folder.url.appendingPathComponent("list.txt").path, "--log", log, "--policies",
            repositoryRoot.appendingPathComponent("policies").path,
        ])
        #expect(run.exitCode == 0)
        #expect(run.standardError == "\(folder.path)/list.txt:2:5: error: 'not-a-url' is not an absolute http(s) URL\n")
        #expect(run.outputLines.last == "skipped 1 malformed entry")
        #expect(run.outputLines[1] == "  pass 1 · allow 0 · block 1 · redirect 0 · warn 0 · respond 0")
    }

    @Test("report filters by --since and --until and rejects a time it cannot read (exit 64)")
    func timeOptions() throws {
        let folder = try TemporaryFolder([:])
        let log = folder.url.appendingPathComponent("audit.jsonl").path
        _ = try runBinary(["replay", "policies/traffic/browsing-session.har", "--log", log])
        let filtered = runInProcess([
            "report", log, "--out", folder.path, "--format", "json", "--since", "2026-11-20T09:30:00Z", "--until",
            "2026-11-20T10:00:00Z",
        ])
        #expect(filtered.exitCode == 0)
        #expect(filtered.outputLines.first == "wrote \(folder.path)/summary.json")
        let json =
            try JSONSerialization.jsonObject(with: Data(contentsOf: folder.url.appendingPathComponent("summary.json")))
            as? [String: Any]
        let total = json?["totalRequests"] as? Int ?? -1
        #expect(total > 0 && total < 86)
        #expect(runInProcess(["report", log, "--since", "last tuesday"]).exitCode == 64)
        #expect(runInProcess(["report", log, "--format", "pdf"]).exitCode == 64)
    }

    @Test("report of a missing log says so and exits 1")
    func missingLog() {
        let run = runInProcess(["report", "/nonexistent/audit.jsonl", "--out", "/tmp"])
        #expect(run.exitCode == 1)
        #expect(
            run.standardError
                == "/nonexistent/audit.jsonl: cannot open the audit log: no such file\n")
    }
}
