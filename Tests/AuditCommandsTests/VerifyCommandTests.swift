import Foundation
import Testing

@Suite struct VerifyCommandTests {
    @Test("a 100,000-request replay keeps every record across rotated files; report counts them all; verify passes")
    func largeReplayKeepsEverything() throws {
        let hosts = ["api.example.com", "cdn.example.net", "www.rivalshop.com", "pixel.adnetwork.test", "example.org"]
        let list = (0..<100_000).map { "https://\(hosts[$0 % hosts.count])/item/\($0)?page=\($0 % 7)" }
        let folder = try TemporaryFolder(["requests.txt": list.joined(separator: "\n") + "\n"])
        let log = folder.url.appendingPathComponent("audit.jsonl").path
        let replay = try runBinary([
            "replay", folder.url.appendingPathComponent("requests.txt").path, "--log", log, "--start",
            "2026-11-20T10:30:00Z",
        ])
        #expect(replay.exitCode == 0)
        #expect(replay.outputLines.first == "replayed 100000 requests from 1 file into \(log)")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter {
            $0.hasPrefix("audit.jsonl")
        }
        #expect(files.count > 2, "the log should have rotated")
        let lineCount = try files.reduce(0) { count, name in
            count + (try Data(contentsOf: folder.url.appendingPathComponent(name)).filter { $0 == 0x0A }.count)
        }
        #expect(lineCount == 100_000)

        let report = try runBinary(["report", log, "--out", folder.url.appendingPathComponent("out").path])
        #expect(report.exitCode == 0)
        #expect(report.outputLines.first?.hasPrefix("read \(log).\(files.count - 1), ") == true)
        #expect(report.outputLines.contains { $0.hasPrefix("100000 requests, ") })

        let verify = try runBinary(["verify", log])
        #expect(verify.exitCode == 0)
        #expect(
            verify.outputLines.last?.hasPrefix("100000 records, seq 1…100000, SHA-256 chain intact; last digest ")
                == true)
    }

    @Test("verify names the edited line by file and line and exits 1")
    func editedLine() throws {
        let folder = try TemporaryFolder([
            "r.txt": "https://a.example.com/1\nhttps://a.example.com/2\nhttps://a.example.com/3\n"
        ])
        let log = folder.url.appendingPathComponent("a.jsonl").path
        _ = try runBinary(["replay", folder.url.appendingPathComponent("r.txt").path, "--log", log])
        var text = try String(contentsOfFile: log, encoding: .utf8)
        text = text.replacingOccurrences(of: "https://a.example.com/2", with: "https://a.example.com/9")
        try Data(text.utf8).write(to: URL(fileURLWithPath: log))
        let run = try runBinary(["verify", log])
        #expect(run.exitCode == 1)
        #expect(run.outputLines.contains { $0.hasPrefix("\(log):2: edited: seq 2 does not match its digest") })
        #expect(run.outputLines.last == "\(log): chain broken: 1 problem")
    }

    @Test("an HMAC-sealed log needs its key: with it, intact; without it, digests are not checked")
    func hmacKey() throws {
        let folder = try TemporaryFolder(["r.txt": "https://a.example.com/1\n", "key": "s3cret-key\n"])
        let log = folder.url.appendingPathComponent("k.jsonl").path
        let key = folder.url.appendingPathComponent("key").path
        _ = try runBinary([
            "replay", folder.url.appendingPathComponent("r.txt").path, "--log", log, "--log-key-file", key,
        ])
        #expect(try String(contentsOfFile: log, encoding: .utf8).contains(#","seq":1,"hmac":""#))
        let withKey = try runBinary(["verify", log, "--log-key-file", key])
        #expect(withKey.exitCode == 0)
        #expect(withKey.outputLines.last?.contains("HMAC-SHA-256 chain intact") == true)
        let without = try runBinary(["verify", log])
        #expect(
            without.outputLines.contains {
                $0 == "digests not checked: the log is HMAC-SHA-256-sealed; give its key with --log-key-file"
            })
    }
}
