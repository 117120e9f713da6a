import AuditReport
import Foundation
import Testing

@Suite struct DiffCommandTests {
    static let oldRules = """
        @category shop
        [block] message="No rivals"
        rival ^https://rival\\.test/(?!search)
        [redirect https://search.example/?q=$1]
        search ^https://rival\\.test/search\\?q=([^&]*)
        [record]
        api ^https://api\\.
        """

    static let newRules = """
        @category shop
        [block] message="No rivals"
        rival ^https://rival\\.test/(?!careers|search)
        [redirect https://find.example/?q=$1]
        search ^https://rival\\.test/search\\?q=([^&]*)
        [record]
        api ^https://api\\.
        api-v2 ^https://api\\.test/v2/
        """

    static let traffic = """
        https://rival.test/shop
        https://rival.test/careers/jobs
        https://rival.test/search?q=shoes
        POST https://api.test/v2/orders
        https://api.test/v1/orders
        https://example.org/
        """

    /// Two policy folders and a request list.
    private func folders() throws -> TemporaryFolder {
        let folder = try TemporaryFolder(["traffic.txt": Self.traffic])
        for (name, rules) in [("old", Self.oldRules), ("new", Self.newRules)] {
            try FileManager.default.createDirectory(
                at: folder.url.appendingPathComponent(name), withIntermediateDirectories: true)
            try Data(rules.utf8).write(to: folder.url.appendingPathComponent("\(name)/shop.rules"))
        }
        return folder
    }

    @Test("every changed decision is listed by old → new verdict and rule, with examples and a count of changes")
    func textOutput() throws {
        let folder = try folders()
        let run = runInProcess(["diff", folder.path + "/old", folder.path + "/new", folder.path + "/traffic.txt"])
        #expect(run.exitCode == 0)
        #expect(
            run.outputLines == [
                "block → pass (shop/rival): 1 request",
                "  GET https://rival.test/careers/jobs: block (shop/rival) → pass",
                "pass → pass: 1 request",
                "  POST https://api.test/v2/orders: pass → pass; recorded [shop/api] → [shop/api, shop/api-v2]",
                "redirect → redirect (shop/search): 1 request",
                "  GET https://rival.test/search?q=shoes: redirect (shop/search) → redirect (shop/search); "
                    + "redirect https://search.example/?q=shoes → https://find.example/?q=shoes",
                "3 of 6 requests change",
            ])
    }

    @Test("--json prints one object per changed request with url, method, old and new")
    func jsonOutput() throws {
        let folder = try folders()
        let run = runInProcess(
            ["diff", folder.path + "/old", folder.path + "/new", folder.path + "/traffic.txt", "--json"])
        #expect(run.outputLines.count == 3)
        let first = try #require(
            try JSONSerialization.jsonObject(with: Data(run.outputLines[0].utf8)) as? [String: Any])
        #expect(run.outputLines[0].hasPrefix(#"{"url":"https://rival.test/careers/jobs","method":"GET","old":"#))
        #expect((first["old"] as? [String: Any])?["verdict"] as? String == "block")
        #expect((first["old"] as? [String: Any])?["rule"] as? String == "shop/rival")
        #expect((first["new"] as? [String: Any])?["verdict"] as? String == "pass")
        #expect((first["new"] as? [String: Any])?["rule"] is NSNull)
        #expect(run.standardError == "3 of 6 requests change\n")
    }

    @Test("--detailed-exitcode exits 2 when a decision changes and 0 when none does")
    func detailedExitCode() throws {
        let folder = try folders()
        let changed = runInProcess([
            "diff", folder.path + "/old", folder.path + "/new", folder.path + "/traffic.txt", "--detailed-exitcode",
        ])
        let same = runInProcess([
            "diff", folder.path + "/old", folder.path + "/old", folder.path + "/traffic.txt", "--detailed-exitcode",
        ])
        #expect(changed.exitCode == 2)
        #expect(same.exitCode == 0)
        #expect(same.outputLines == ["0 of 6 requests change"])
    }

    @Test("an audit log is traffic too: each logged request is decided again by both policies")
    func auditLogTraffic() throws {
        let folder = try folders()
        let log = folder.path + "/audit.jsonl"
        let replay = runInProcess([
            "replay", folder.path + "/traffic.txt", "--policies", folder.path + "/old", "--log", log,
        ])
        let run = runInProcess(["diff", folder.path + "/old", folder.path + "/new", log])
        #expect(replay.exitCode == 0)
        #expect(run.outputLines.last == "3 of 6 requests change")
    }

    @Test("--out writes the diff as Markdown and HTML")
    func reports() throws {
        let folder = try folders()
        let run = runInProcess([
            "diff", folder.path + "/old", folder.path + "/new", folder.path + "/traffic.txt", "--out",
            folder.path + "/diff",
        ])
        let markdown = try String(contentsOfFile: folder.path + "/diff/diff.md", encoding: .utf8)
        let html = try String(contentsOfFile: folder.path + "/diff/diff.html", encoding: .utf8)
        #expect(run.exitCode == 0)
        #expect(markdown.contains("| block → pass | shop/rival | 1 |"))
        #expect(html.contains("<td>block → pass</td><td>shop/rival</td><td class=\"n\">1</td>"))
    }

    @Test("a traffic file that cannot be read exits 1 naming it; a bad format is a usage error")
    func errors() throws {
        let folder = try folders()
        let missing = runInProcess(["diff", folder.path + "/old", folder.path + "/new", folder.path + "/none.txt"])
        let badFormat = runInProcess([
            "diff", folder.path + "/old", folder.path + "/new", folder.path + "/traffic.txt", "--format", "pdf",
        ])
        #expect(missing.exitCode == 1)
        #expect(missing.standardError.contains(folder.path + "/none.txt"))
        #expect(badFormat.exitCode == 64)
    }
}
