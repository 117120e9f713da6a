import AuditPolicy
import AuditRegex
import Foundation
import Testing

/// Odd and hostile policy files and requests: each gives a clear error or works, never a crash or a hang.
@Suite struct HostileInputTests {
    /// A fresh folder holding `files` (name → bytes).
    static func folder(_ files: [String: [UInt8]]) throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ra-hostile-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        for (name, bytes) in files {
            let file = path + "/" + name
            try FileManager.default.createDirectory(
                atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try Data(bytes).write(to: URL(fileURLWithPath: file))
        }
        return path
    }

    @Test("an empty rule file loads as a policy without rules")
    func emptyFile() throws {
        let path = try Self.folder(["empty.rules": []])
        #expect(try Policy(directory: path).rules.isEmpty)
    }

    @Test("a binary file is rejected at the first byte that is not UTF-8, by line and column")
    func binaryFile() throws {
        let path = try Self.folder([
            "blob.rules": [0x5B, 0x62, 0x6C, 0x6F, 0x63, 0x6B, 0x5D, 0x0A, 0x61, 0x20, 0xFF, 0xFE, 0x00]
        ])
        #expect {
            try Policy(directory: path)
        } throws: { error in
            guard case .invalidPolicy(let diagnostics) = error as? PolicyError, let first = diagnostics.first else {
                return false
            }
            return first.location.file == path + "/blob.rules" && first.location.line == 2 && first.location.column == 3
                && first.isError
        }
    }

    @Test("CRLF line endings, a byte-order mark and tabs read like plain LF text")
    func crlfBomTabs() throws {
        let text = "\u{FEFF}# rules\r\n[block]\tpriority=2\r\nads\t^https://ads\\.test/\r\n\tpixel\t\t/pixel\\.gif\r\n"
        let policy = try Policy(parsing: text, file: "crlf.rules")
        #expect(policy.rules.map(\.id) == ["crlf/ads", "crlf/pixel"])
        #expect(policy.rules.map(\.pattern.source) == [#"^https://ads\.test/"#, #"/pixel\.gif"#])
        #expect(policy.rules[1].location.line == 4)
        #expect(policy.rules.allSatisfy { $0.priority == 2 })
        #expect(policy.evaluate(AuditRequest(url: "https://ads.test/x")).action == .block)
    }

    @Test("a duplicate id in another file is an error at the second definition that names the first")
    func duplicateAcrossFiles() throws {
        let path = try Self.folder([
            "a/shared.rules": Array("@category shared\n[block]\ntracker /t\\.js\n".utf8),
            "b/shared.rules": Array("@category shared\n[warn]\ntracker /u\\.js\n".utf8),
        ])
        #expect {
            try Policy(directory: path)
        } throws: { error in
            guard case .invalidPolicy(let diagnostics) = error as? PolicyError else { return false }
            return diagnostics.map(\.description) == [
                "\(path)/b/shared.rules:3:1: error: duplicate rule id 'shared/tracker' (first defined at \(path)/a/shared.rules:3:1)"
            ]
        }
    }

    @Test("a symlink loop in the policies folder neither hangs nor reads a file twice")
    func symlinkLoop() throws {
        let path = try Self.folder(["real/one.rules": Array("[block]\nr /x\n".utf8)])
        try FileManager.default.createSymbolicLink(atPath: path + "/real/loop", withDestinationPath: path)
        try FileManager.default.createSymbolicLink(atPath: path + "/self", withDestinationPath: ".")
        let policy = try Policy(directory: path)
        #expect(policy.rules.map(\.id) == ["one/r"])
    }

    @Test("100,000 rules load, and the index keeps evaluation to the few that can match")
    func hugePolicy() throws {
        var text = "[block]\n"
        for number in 0..<100_000 { text += "r\(number) ^https://(?:[^/]*\\.)?host\(number)\\.example/\n" }
        let policy = try Policy(parsing: text, file: "huge.rules")
        #expect(policy.rules.count == 100_000)
        #expect(policy.indexStatistics.alwaysRun == 0)
        let request = AuditRequest(url: "https://www.host99999.example/")
        #expect(policy.candidateRules(for: request).map(\.id) == ["huge/r99999"])
        #expect(policy.evaluate(request).rule?.id == "huge/r99999")
    }

    static let limits = MatchLimits(matchLimit: 100_000, depthLimit: 10_000)

    @Test(
        "huge and garbled requests finish under the limits with the documented verdicts",
        arguments: [
            "https://x.test/" + String(repeating: "a", count: 1_000_000),
            "https://x.test/" + String(repeating: "%ZZ%00%FF", count: 20_000),
            "https://x.test/\u{0}\u{0}/nul",
            "https://x.test/" + String(decoding: [0xC3, 0x28, 0xA0, 0xA1, 0xF0, 0x28, 0x8C], as: UTF8.self),
        ])
    func hugeRequests(url: String) throws {
        let policy = try Policy(
            parsing: "[record]\nseen .\n[block]\nslow (a+)+$\n", file: "slow.rules", limits: Self.limits)
        let closed = policy.evaluate(AuditRequest(url: url))
        let open = policy.evaluate(AuditRequest(url: url), onError: .pass)
        if closed.errors.isEmpty {
            #expect(closed == policy.evaluateEveryRule(AuditRequest(url: url)))
        } else {
            #expect(closed.action == .block && closed.rule?.id == "slow/slow")
            #expect(closed.errors.map(\.ruleID) == ["slow/slow"])
            #expect(open.action == .pass && open.errors.map(\.ruleID) == ["slow/slow"])
        }
        #expect(closed.recorded.map(\.id) == ["slow/seen"])
    }

    @Test("a request with 100,000 headers is decided, header rules included")
    func manyHeaders() throws {
        let policy = try Policy(parsing: "[block] field=header:x-flag\nflag ^on$\n", file: "h.rules")
        var headers = (0..<100_000).map { AuditRequest.Header(name: "X-Filler-\($0)", value: "v\($0)") }
        #expect(policy.evaluate(AuditRequest(url: "https://x.test/", headers: headers)).action == .pass)
        headers.append(.init(name: "X-Flag", value: "on"))
        #expect(policy.evaluate(AuditRequest(url: "https://x.test/", headers: headers)).rule?.id == "h/flag")
    }

    @Test(
        "catastrophic patterns on long URLs fail closed naming the rule",
        arguments: [#"(a+)+$"#, #"(\w+\.?)+$"#, #"(.*a){20}$"#])
    func catastrophic(pattern: String) throws {
        let policy = try Policy(parsing: "[allow]\nslow \(pattern)\n", file: "c.rules", limits: Self.limits)
        let verdict = policy.evaluate(AuditRequest(url: "https://x.test/" + String(repeating: "a", count: 5_000) + "!"))
        #expect(verdict.action == .block)
        #expect(verdict.rule?.id == "c/slow")
        #expect(verdict.errors.first?.description.contains("limit exceeded") == true)
    }

    @Test("lint warns about a pattern that hits the match limits on a probe input")
    func lintProbeWarning() throws {
        let path = try Self.folder(["p.rules": Array("[block]\nfine /ads/\nslow (a+)+$\n".utf8)])
        let report = try PolicyLinter.lint(directory: path)
        #expect(report.errorCount == 0)
        let warnings = report.diagnostics.filter { !$0.isError }.map(\.description)
        #expect(warnings.count == 1)
        #expect(warnings.first?.hasPrefix("\(path)/p.rules:3:1: warning: pattern hits the match limit") == true)
    }
}
