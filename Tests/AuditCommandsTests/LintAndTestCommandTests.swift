import Foundation
import Testing

@Suite struct LintCommandTests {
    @Test("lint of the bundled policies finds no problem and exits 0")
    func bundledIsClean() throws {
        let run = try runBinary(["lint"])
        #expect(run.exitCode == 0)
        #expect(run.outputLines == ["policies: no problems in 4 rule files and 4 test files (29 rules)"])
    }

    @Test("lint prints every problem compiler-style, a count, and exits 1")
    func reportsEveryProblem() throws {
        let folder = try TemporaryFolder([
            "danger.rules": "@category danger\n[warn]\nlook ^https://(a|b\n[block]\n[redirect /x]\nr y\nlook ^z",
            "danger.test": "warn danger/look https://a.test/\nwarn danger/nope",
        ])
        let run = runInProcess(["lint", folder.path])
        #expect(run.exitCode == 1)
        #expect(
            run.outputLines == [
                "\(folder.path)/danger.rules:3:19: error: invalid pattern: missing closing parenthesis",
                "\(folder.path)/danger.rules:4:1: warning: section has no rules",
                "\(folder.path)/danger.rules:5:11: error: redirect target '/x' is not an absolute http(s) URL",
                "\(folder.path)/danger.test:2:17: error: expected a URL (line format: EXPECT RULE [METHOD] URL [Header:value …] [-> TARGET or STATUS])",
                "\(folder.path): 3 errors, 1 warning in 1 rule file and 1 test file",
            ])
    }

    @Test("lint of a missing folder says so and exits 1")
    func missingFolder() {
        let run = runInProcess(["lint", "/nonexistent/policies"])
        #expect(run.exitCode == 1)
        #expect(run.standardError == "/nonexistent/policies: error: no such directory\n")
    }

    @Test(
        "a command whose policies folder is missing says how to name another, and exits 1",
        arguments: [
            (["check", "--policies", "/nonexistent/policies", "http://a.test/"], "error: no such directory"),
            (
                ["replay", "--policies", "/nonexistent/policies", "--log", "/dev/null", "x.txt"],
                "error: no such directory"
            ),
            (["test", "/nonexistent/policies"], "error: no such directory"),
        ])
    func missingPoliciesHint(_ arguments: [String], reason: String) {
        let run = runInProcess(arguments)
        let option = arguments[0] == "test" ? "audit test DIR" : "--policies DIR"
        #expect(run.exitCode == 1)
        #expect(
            run.standardError
                == "/nonexistent/policies: \(reason) (the folder of .rules files; name yours with \(option))\n")
    }
}

@Suite struct TestCommandTests {
    @Test("test runs the bundled policy tests, shows coverage, ends with the count and exits 0")
    func bundledPass() throws {
        let run = try runBinary(["test", "policies", "--coverage"])
        #expect(run.exitCode == 0)
        #expect(run.outputLines.count == 2)
        #expect(run.outputLines.first == "coverage: 29 of 29 rules exercised")
        #expect(run.outputLines.last?.wholeMatch(of: /[0-9]+ passed, 0 failed/) != nil)
    }

    @Test("a failing case shows expected and actual, the count line is last, exit 1")
    func failingCase() throws {
        let folder = try TemporaryFolder([
            "shop.rules":
                "[block] message=\"Competitor storefront\"\nrival ^https://rival\\.test/\n[warn]\nodd ^https://odd\\.test/",
            "shop.test": "block shop/rival https://rival.test/a\n\npass - https://rival.test/b",
        ])
        let run = runInProcess(["test", folder.path, "--coverage"])
        #expect(run.exitCode == 1)
        #expect(
            run.outputLines == [
                "FAIL \(folder.path)/shop.test:3: pass - https://rival.test/b",
                "     expected: pass",
                "       actual: block by shop/rival",
                "coverage: 1 of 2 rules exercised",
                "  not exercised: shop/odd (\(folder.path)/shop.rules:4:1)",
                "1 passed, 1 failed",
            ])
    }

    @Test("--verbose shows passing cases too")
    func verbose() throws {
        let folder = try TemporaryFolder([
            "a.rules": "[block]\nr ^https://r\\.test/", "a.test": "block a/r https://r.test/",
        ])
        let run = runInProcess(["test", folder.path, "-v"])
        #expect(run.outputLines == ["PASS \(folder.path)/a.test:1: block a/r https://r.test/", "1 passed, 0 failed"])
    }
}

@Suite struct LintStatisticsTests {
    @Test("lint --stats shows how the rules are indexed and which run for every request")
    func stats() throws {
        let folder = try TemporaryFolder([
            "ads.rules":
                "[block]\nhost ^https?://(?:[^/?#]*\\.)?doubleclick\\.net/\nnumeric [0-9]{4,}/[0-9]+\nbanner /banner\n"
        ])
        let run = runInProcess(["lint", folder.path, "--stats"])
        #expect(run.exitCode == 0)
        #expect(
            run.outputLines == [
                "\(folder.path): no problems in 1 rule file and 0 test files (3 rules)",
                "index: 3 rules",
                "  found by whole token:        1",
                "  found by two tokens:         0",
                "  found by token start or end: 1",
                "  found by letters in a token: 0",
                "  of these, by the host alone: 0",
                "  run for every request:       1",
                "    ads/numeric",
                "  answered by their shape:     1",
                "  busiest keys: banner… (1), doubleclick (1)",
            ])
    }
}
