import AuditPolicy
import Testing

/// What the index files rules under, as `audit lint --stats` reports it.
@Suite struct IndexStatisticsTests {
    @Test(
        "each kind of pattern is filed under the key its matches must carry",
        arguments: [
            (#"^[a-z][a-z0-9+.-]*:/+(?:[^/?#]*\.)?doubleclick\.net(?:[^a-z0-9_.%-]|$)"#, "host:doubleclick"),
            (#"/adserver\."#, "adserver"),
            (#"tracking-pixel"#, "…tracking"),
            (#"\.gif\?pixelid="#, "pixelid"),
            (#"banner_ad"#, "…banner"),
            (#"^https://x\.test/(?:alpha|beta)/"#, "test"),
        ])
    func keys(pattern: String, key: String) throws {
        let policy = try Policy(parsing: "[block]\nr \(pattern)", file: "k.rules")
        #expect(policy.indexStatistics.busiestKeys.map(\.key) == [key])
        #expect(policy.indexStatistics.alwaysRun == 0)
    }

    @Test(
        "patterns without a dependable literal run for every request",
        arguments: [#"(a+)+$"#, #"[0-9]{3}\.[0-9]+/"#, #"(*LIMIT_MATCH=10)ads"#, #"(?x) a d s"#, #"a{,3}ds"#])
    func alwaysRun(pattern: String) throws {
        let policy = try Policy(parsing: "[block]\nr \(pattern)", file: "k.rules")
        #expect(policy.indexStatistics.alwaysRunRuleIDs == ["k/r"])
    }

    @Test("an alternation is filed under one key per branch")
    func alternation() throws {
        let policy = try Policy(parsing: "[block]\nr ^https://(?:alpha|beta)\\.example/", file: "k.rules")
        #expect(Set(policy.indexStatistics.busiestKeys.map(\.key)) == ["example"])
        let split = try Policy(parsing: "[block]\nr (?:/alpha/|/beta/)", file: "k.rules")
        #expect(Set(split.indexStatistics.busiestKeys.map(\.key)) == ["alpha", "beta"])
    }

    @Test("a Kelvin sign in the request makes every rule of the field a candidate")
    func kelvinSign() throws {
        let policy = try Policy(parsing: "[block]\nr /kit/\n[block] field=host\nh ^other\\.test$", file: "k.rules")
        let request = AuditRequest(url: "app://a.test/\u{212A}it/")
        #expect(policy.candidateRules(for: request).map(\.id) == ["k/r"])
        #expect(policy.evaluate(request).rule?.id == "k/r")
    }
}
