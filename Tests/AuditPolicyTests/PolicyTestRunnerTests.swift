import AuditPolicy
import Foundation
import Testing

@Suite struct PolicyTestRunnerTests {
    let policy: Policy

    init() throws {
        policy = try Policy(
            parsing: """
                [block] message="Competitor storefront"
                rival-shop      ^https?://([a-z0-9-]+\\.)*rivalshop\\.com(/|$)
                [redirect https://search.example.com/?q=$1]
                rival-search    ^https?://search\\.rival\\.com/search\\?q=([^&]*)
                [allow] priority=10
                rival-careers   ^https?://careers\\.rivalshop\\.com/
                [record] methods=POST
                api-calls       ^https://api\\.
                [record] field=header:content-length
                big             ^[0-9]{7,}$
                [warn]
                unused          ^https://never\\.test/
                """, file: "competitor.rules")
    }

    @Test("every line of the documented test format runs and passes")
    func documentedFormat() {
        let report = policy.runTests([
            PolicySource(
                file: "competitor.test",
                text: """
                    # expect   rule                      [METHOD] URL                                 [-> target]
                    block      competitor/rival-shop     https://www.rivalshop.com/cart
                    redirect   competitor/rival-search   https://search.rival.com/search?q=shoes -> https://search.example.com/?q=shoes
                    allow      competitor/rival-careers  https://careers.rivalshop.com/jobs
                    pass       -                         https://example.org/
                    record     competitor/api-calls      POST https://api.example.com/v1/items
                    record     competitor/big            PUT https://up.test/f Content-Length:12345678
                    """)
        ])
        #expect(report.results.map(\.isPassing) == [true, true, true, true, true, true])
        #expect(report.diagnostics.isEmpty)
        #expect(report.summary == "6 passed, 0 failed")
    }

    @Test("a failing case shows where it is, what was expected and what happened")
    func failureDescription() throws {
        let report = policy.runTests([
            PolicySource(file: "p/c.test", text: "\nblock competitor/rival-shop https://rivalshop.org/")
        ])
        let result = try #require(report.results.first)
        #expect(result.isPassing == false)
        #expect(
            result.description == """
                FAIL p/c.test:2: block competitor/rival-shop https://rivalshop.org/
                     expected: block by competitor/rival-shop
                       actual: pass
                """)
        #expect(report.summary == "0 passed, 1 failed")
    }

    @Test("a verdict case names the deciding rule; '-' asserts the verdict only")
    func ruleMustMatch() {
        let report = policy.runTests([
            PolicySource(
                file: "c.test",
                text: """
                    allow competitor/rival-shop https://careers.rivalshop.com/x
                    allow -                     https://careers.rivalshop.com/x
                    """)
        ])
        #expect(report.results.map(\.isPassing) == [false, true])
        #expect(report.results.first?.actual == "allow by competitor/rival-careers")
    }

    @Test("a redirect case with a target asserts the exact target")
    func redirectTarget() {
        let report = policy.runTests([
            PolicySource(
                file: "c.test",
                text: """
                    redirect competitor/rival-search https://search.rival.com/search?q=a -> https://search.example.com/?q=b
                    """)
        ])
        #expect(
            report.results.first?.actual == "redirect by competitor/rival-search -> https://search.example.com/?q=a")
        #expect(report.failedCount == 1)
    }

    @Test("a record case fails when the rule is not among the recorded rules")
    func recordFailure() {
        let report = policy.runTests([
            PolicySource(file: "c.test", text: "record competitor/api-calls GET https://api.example.com/")
        ])
        #expect(report.results.first?.isPassing == false)
        #expect(report.results.first?.actual == "no rule recorded")
    }

    @Test("malformed lines and unknown rules are failures with their position, the rest still runs")
    func malformedLines() {
        let report = policy.runTests([
            PolicySource(
                file: "c.test",
                text: """
                    blok competitor/rival-shop https://x.test/
                    pass competitor/rival-shop https://x.test/
                    record - https://x.test/
                    block competitor/nope https://x.test/
                    block competitor/rival-shop
                    warn - https://x.test/ -> https://y.test/
                    block - https://x.test/ extra
                    pass - https://example.org/
                    pass - POST www.rivalshop.com/cart
                    pass - localhost:8080/admin X-A:1
                    respond local/pixel app://local/pixel.gif -> 200
                    """)
        ])
        #expect(
            report.diagnostics.map(\.description) == [
                "c.test:1:1: error: unknown expectation 'blok' (expected pass, allow, block, redirect, warn, respond, record, cache)",
                "c.test:2:6: error: a pass case takes '-' as its rule, found 'competitor/rival-shop'",
                "c.test:3:8: error: a record case needs a rule id",
                "c.test:4:7: error: unknown rule 'competitor/nope'",
                "c.test:5:28: error: expected a URL (line format: EXPECT RULE [METHOD] URL [Header:value …] [-> TARGET or STATUS])",
                "c.test:6:24: error: only a redirect case takes '-> TARGET' and a respond case '-> STATUS'",
                "c.test:7:25: error: unexpected 'extra' after the URL (headers are written Name:value)",
                "c.test:9:13: error: 'www.rivalshop.com/cart' is not an absolute URL: it has no scheme "
                    + "(https://www.rivalshop.com/cart?)",
                "c.test:10:8: error: 'localhost:8080/admin' is not an absolute URL: it has no scheme "
                    + "(https://localhost:8080/admin?)",
                "c.test:11:9: error: unknown rule 'local/pixel'",
            ])
        #expect(report.summary == "1 passed, 10 failed")
    }

    @Test("coverage lists the rules no case exercised (deciding or recorded counts as exercised)")
    func coverage() {
        let report = policy.runTests([
            PolicySource(
                file: "c.test",
                text: """
                    block competitor/rival-shop https://rivalshop.com/
                    pass - POST https://api.test/
                    """)
        ])
        #expect(
            report.unexercisedRules.map(\.id) == [
                "competitor/rival-search", "competitor/rival-careers", "competitor/big", "competitor/unused",
            ])
    }

    @Test("verify passes silently for a holding case")
    func verifyPasses() throws {
        try policy.verify("block competitor/rival-shop https://www.rivalshop.com/cart")
        try policy.verify("record competitor/api-calls POST https://api.example.com/v1/items")
    }

    @Test("verify throws the failed result for a case that does not hold")
    func verifyFails() {
        #expect(throws: PolicyError.self) { try policy.verify("pass - https://www.rivalshop.com/cart") }
        do {
            try policy.verify("pass - https://www.rivalshop.com/cart", file: "MyTests.swift", lineNumber: 12)
        } catch {
            #expect(
                error.description == """
                    FAIL MyTests.swift:12: pass - https://www.rivalshop.com/cart
                         expected: pass
                           actual: block by competitor/rival-shop
                    """)
        }
    }

    @Test("verify rejects a malformed case or an unknown rule instead of passing it")
    func verifyRejectsBadCase() {
        #expect(
            throws: PolicyError.invalidTestCase(
                Diagnostic(
                    .error, at: SourceLocation(file: "T.swift", line: 3, column: 7), "unknown rule 'competitor/typo'"))
        ) {
            try policy.verify("block competitor/typo https://www.rivalshop.com/", file: "T.swift", lineNumber: 3)
        }
    }

    @Test("the bundled policies pass their own tests and every rule is exercised")
    func bundledPolicies() throws {
        let bundled = try Policy(directory: bundledPoliciesPath)
        let report = try bundled.runTests(directory: bundledPoliciesPath)
        #expect(report.results.filter { !$0.isPassing }.map(\.description) == [])
        #expect(report.diagnostics.isEmpty)
        #expect(report.unexercisedRules.isEmpty)
        #expect(report.results.count >= 50)
        #expect(Set(bundled.rules.map(\.category)) == ["competitor", "danger", "local", "statistics"])
    }
}
