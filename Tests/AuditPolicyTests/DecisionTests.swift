import AuditPolicy
import AuditRegex
import Testing

@Suite struct DecisionTests {
    @Test("no matching deciding rule gives pass")
    func passWithoutMatch() throws {
        let policy = try Policy(parsing: "[block]\nr ^https://blocked\\.test/")
        let verdict = policy.verdict("https://fine.test/")
        #expect(verdict.action == .pass)
        #expect(verdict.rule == nil)
        #expect(verdict.errors.isEmpty)
    }

    @Test("a higher priority wins over the action ranking")
    func priorityFirst() throws {
        let policy = try Policy(
            parsing: """
                [allow]
                a ^https://p\\.test/
                [warn] priority=1
                w ^https://p\\.test/
                """, file: "p.rules")
        #expect(policy.verdict("https://p.test/x").rule?.id == "p/w")
        #expect(policy.verdict("https://p.test/x").action == .warn)
    }

    @Test("negative priorities lose to the default")
    func negativePriority() throws {
        let policy = try Policy(parsing: "[allow] priority=-1\na x\\.test\n[warn]\nw x\\.test", file: "n.rules")
        #expect(policy.verdict("https://x.test/").rule?.id == "n/w")
    }

    static let ties: [(String, String, Verdict.Action)] = [
        ("allow", "block", .allow), ("block", "allow", .allow),
        ("block", "redirect https://r.test/", .block), ("redirect https://r.test/", "block", .block),
        ("redirect https://r.test/", "warn", .redirect), ("warn", "redirect https://r.test/", .redirect),
        ("allow", "warn", .allow), ("warn", "block", .block),
        ("allow", "respond 204", .allow), ("respond 204", "allow", .allow),
        ("block", "respond 204", .block), ("respond 204", "block", .block),
        ("respond 204", "redirect https://r.test/", .respond), ("redirect https://r.test/", "respond 204", .respond),
        ("respond 204", "warn", .respond), ("warn", "respond 204", .respond),
    ]

    @Test(
        "on a priority tie allow beats block beats respond beats redirect beats warn, whatever the order",
        arguments: ties)
    func tieRanking(first: String, second: String, winner: Verdict.Action) throws {
        let policy = try Policy(parsing: "[\(first)]\none ^https://tie\\.test/\n[\(second)]\ntwo ^https://tie\\.test/")
        #expect(policy.verdict("https://tie.test/").action == winner)
    }

    @Test("allow wins a priority tie against block")
    func allowWinsTie() throws {
        let policy = try Policy(
            parsing: """
                [allow]
                a ^https://tie\\.test/
                [block]
                b ^https://tie\\.test/
                """, file: "tie.rules")
        let verdict = policy.evaluate(AuditRequest(method: "GET", url: "https://tie.test/x"))
        #expect(verdict.action == .allow)
        #expect(verdict.rule?.id == "tie/a")
    }

    @Test("on a full tie the earliest rule decides: files in order, then lines")
    func earliestRuleWins() throws {
        let policy = try Policy(sources: [
            PolicySource(file: "a.rules", text: "[block] message=first\none x\\.test\ntwo x\\.test"),
            PolicySource(file: "b.rules", text: "[block] message=second\nthree x\\.test"),
        ])
        #expect(policy.verdict("https://x.test/").rule?.id == "a/one")
        #expect(policy.verdict("https://x.test/").message == "first")
    }

    @Test("every matching record rule is reported in policy order, whatever the verdict")
    func recordRules() throws {
        let policy = try Policy(
            parsing: """
                [record]
                all .
                api ^https://api\\.
                never ^https://nope\\.
                [block]
                b ^https://api\\.x\\.test/
                [record]
                late x\\.test
                """, file: "s.rules")
        let verdict = policy.verdict("https://api.x.test/v1")
        #expect(verdict.action == .block)
        #expect(verdict.recorded.map(\.id) == ["s/all", "s/api", "s/late"])
    }

    @Test("a record rule never decides the verdict, whatever its priority")
    func recordNeverDecides() throws {
        let policy = try Policy(parsing: "[record] priority=100\nr ^https://", file: "s.rules")
        let verdict = policy.verdict("https://x.test/")
        #expect(verdict.action == .pass)
        #expect(verdict.rule == nil)
        #expect(verdict.recorded.map(\.id) == ["s/r"])
    }

    @Test("methods= limits a rule to those methods, compared case-insensitively")
    func methodsFilter() throws {
        let policy = try Policy(parsing: "[block] methods=POST,put\nw ^https://api\\.test/")
        #expect(policy.verdict("https://api.test/", method: "GET").action == .pass)
        #expect(policy.verdict("https://api.test/", method: "post").action == .block)
        #expect(policy.verdict("https://api.test/", method: "PUT").action == .block)
    }

    static let fields: [(option: String, pattern: String, url: String, matches: Bool)] = [
        ("host", "^shop\\.test$", "https://SHOP.test:8443/a?b=c", true),
        ("host", "^shop\\.test$", "https://www.shop.test/", false),
        ("host", "^::1$", "http://[::1]:8080/x", true),
        ("path", "^/cart/[0-9]+$", "https://shop.test/cart/42?x=1#frag", true),
        ("path", "^/$", "https://shop.test", true),
        ("path", "^/$", "https://shop.test?q=1", true),
        ("query", "^q=shoes&page=2$", "https://shop.test/s?q=shoes&page=2#top", true),
        ("query", "^$", "https://shop.test/s", true),
        ("query", "shoes", "https://shop.test/shoes", false),
        ("method", "^GET$", "https://shop.test/", true),
        ("url", "^https://shop\\.test/Cart\\?ID=1$", "HTTPS://Shop.TEST:443/Cart?ID=1#x", true),
    ]

    @Test("field= matches the chosen part of the request", arguments: fields)
    func fieldSubjects(option: String, pattern: String, url: String, matches: Bool) throws {
        let policy = try Policy(parsing: "[block] field=\(option) case=sensitive\nr \(pattern)")
        #expect((policy.verdict(url).action == .block) == matches)
    }

    @Test("a header rule matches the header's value, repeated headers joined with ', '")
    func headerField() throws {
        let policy = try Policy(parsing: "[warn] field=header:x-agent\nbots ^crawler, gpt$")
        let request = AuditRequest(
            url: "https://a.test/",
            headers: [
                .init(name: "X-Agent", value: "crawler"), .init(name: "x-agent", value: "gpt"),
            ])
        #expect(policy.evaluate(request).action == .warn)
    }

    @Test("a header rule never matches a request without that header, even an empty pattern")
    func missingHeader() throws {
        let policy = try Policy(parsing: "[block] field=header:authorization\nno-auth ^$")
        #expect(policy.verdict("https://a.test/").action == .pass)
        #expect(policy.verdict("https://a.test/", headers: ["Authorization": ""]).action == .block)
    }

    @Test("patterns are case-insensitive by default and case=sensitive makes them exact")
    func caseOption() throws {
        let insensitive = try Policy(parsing: "[block]\nr /Admin/")
        let sensitive = try Policy(parsing: "[block] case=sensitive\nr /Admin/")
        #expect(insensitive.verdict("https://a.test/ADMIN/").action == .block)
        #expect(sensitive.verdict("https://a.test/ADMIN/").action == .pass)
        #expect(sensitive.verdict("https://a.test/Admin/").action == .block)
    }

    @Test("redirect targets substitute $0 to $9 from the captures")
    func redirectCaptures() throws {
        let policy = try Policy(
            parsing: """
                [redirect https://new.test/$2/$1?was=$0]
                r ^https://old\\.test/([a-z]+)/([0-9]+)
                """)
        let verdict = policy.verdict("https://old.test/item/42/details")
        #expect(verdict.action == .redirect)
        #expect(verdict.redirectTarget == "https://new.test/42/item?was=https://old.test/item/42")
    }

    @Test("a capture group that did not take part substitutes as empty text")
    func unsetGroup() throws {
        let policy = try Policy(parsing: "[redirect https://n.test/$1$2]\nr ^https://o\\.test/(a)?(b)")
        #expect(policy.verdict("https://o.test/b").redirectTarget == "https://n.test/b")
    }

    @Test("captures of a non-url field come from that field")
    func redirectFromHostField() throws {
        let policy = try Policy(parsing: "[redirect https://mirror.test/$1]\nr ^([a-z]+)\\.rival\\.test$")
        let rule = try Policy(parsing: "[redirect https://mirror.test/$1] field=host\nr ^([a-z]+)\\.rival\\.test$")
        #expect(policy.verdict("https://shop.rival.test/x").action == .pass)
        #expect(rule.verdict("https://shop.rival.test/x").redirectTarget == "https://mirror.test/shop")
    }

    @Test("a redirect result that is not an absolute http(s) URL blocks, naming the rule")
    func invalidRedirectFailsClosed() throws {
        let policy = try Policy(parsing: "[redirect $1]\nunwrap ^https://t\\.test/\\?u=([^&]*)", file: "r.rules")
        #expect(policy.verdict("https://t.test/?u=https://dest.test/").redirectTarget == "https://dest.test/")
        let verdict = policy.verdict("https://t.test/?u=javascript:alert(1)")
        #expect(verdict.action == .block)
        #expect(verdict.rule?.id == "r/unwrap")
        #expect(
            verdict.errors.map(\.description) == [
                "r/unwrap: redirect target 'javascript:alert(1)' is not an absolute http(s) URL"
            ])
    }

    @Test("with onError: .pass an invalid redirect is ignored and the next rule decides")
    func invalidRedirectIgnored() throws {
        let policy = try Policy(
            parsing: "[redirect $1]\nunwrap u=([^&]*)\n[warn]\nw ^https://t\\.test/", file: "r.rules")
        let verdict = policy.evaluate(AuditRequest(url: "https://t.test/?u=ftp://x"), onError: .pass)
        #expect(verdict.action == .warn)
        #expect(verdict.rule?.id == "r/w")
        #expect(verdict.errors.map(\.ruleID) == ["r/unwrap"])
    }

    @Test("with onError: .pass each failing redirect is dropped in turn, in the order rules decide")
    func failingRedirectsDroppedInDecidingOrder() throws {
        let policy = try Policy(
            parsing: """
                [warn]
                low ^https://t\\.test/
                [redirect $1] priority=1
                first u=([^&]*)
                [block]
                later ^https://t\\.test/\\?u=ftp
                [redirect $1] priority=2
                top v=([^&]*)
                """, file: "r.rules")
        let verdict = policy.evaluate(AuditRequest(url: "https://t.test/?u=ftp://x&v=mailto:y"), onError: .pass)
        // top (priority 2) and first (priority 1) fail; block and warn tie at 0, block ranks first.
        #expect(verdict.action == .block)
        #expect(verdict.rule?.id == "r/later")
        #expect(verdict.errors.map(\.ruleID) == ["r/top", "r/first"])
    }

    @Test("a match that hits the match limit blocks, naming the rule (fail closed)")
    func matchLimitFailsClosed() throws {
        let limits = MatchLimits(matchLimit: 5_000, depthLimit: 5_000)
        let policy = try Policy(
            parsing: "[record]\nseen .\n[allow]\nslow ^https://x\\.test/(a+)+$", file: "m.rules", limits: limits)
        let url = "https://x.test/" + String(repeating: "a", count: 30) + "!"
        let verdict = policy.verdict(url)
        #expect(verdict.action == .block)
        #expect(verdict.rule?.id == "m/slow")
        #expect(verdict.recorded.map(\.id) == ["m/seen"])
        #expect(verdict.errors == [EvaluationError(ruleID: "m/slow", reason: .matchFailed(.matchLimitExceeded))])
    }

    @Test("with onError: .pass a failing match is ignored but still reported")
    func matchLimitIgnored() throws {
        let limits = MatchLimits(matchLimit: 5_000, depthLimit: 5_000)
        let policy = try Policy(parsing: "[block]\nslow ^https://x\\.test/(a+)+$", file: "m.rules", limits: limits)
        let verdict = policy.evaluate(
            AuditRequest(url: "https://x.test/" + String(repeating: "a", count: 30) + "!"), onError: .pass)
        #expect(verdict.action == .pass)
        #expect(verdict.errors.map(\.ruleID) == ["m/slow"])
    }

    @Test("non-ASCII URLs match in their canonical form: the host in punycode, the path percent-encoded")
    func unicodeURL() throws {
        let policy = try Policy(parsing: "[block]\nr ^https://xn--bcher-kva\\.test/stra%C3%9Fe/%C3%9F$")
        #expect(policy.verdict("https://BÜCHER.test/straße/ß").action == .block)
        #expect(policy.verdict("https://bücher.test/strasse/ß").action == .pass)
    }

    @Test(
        "a URL with non-ASCII bytes is indexed in its canonical form, whose IDNA mapping adds letters",
        arguments: [
            ("r ^https://xn--i-9bb\\.test/", "https://\u{130}.test/"),
            ("r ^https://xn--info-qwc\\.test/", "https://\u{130}NFO.test/"),
            ("r (?i)://xn--i-9bb\\.", "https://\u{130}.test/"),
        ])
    func nonASCIIHostLowerCased(rule: String, url: String) throws {
        let policy = try Policy(parsing: "[block]\n\(rule)", file: "n.rules")
        #expect(policy.evaluateEveryRule(AuditRequest(url: url)).action == .block)
        #expect(policy.verdict(url).action == .block)
    }

    @Test("NUL and control characters in URLs are matched percent-encoded; escapes of reserved bytes stay escaped")
    func encodedGarbage() throws {
        let policy = try Policy(parsing: "[block] case=sensitive\nenc %00|%FF\n[warn]\nnul \\x00")
        #expect(policy.verdict("https://a.test/%00%ff%zz").action == .block)
        #expect(policy.verdict("https://a.test/a\u{0}b").rule?.id == "inline/enc")
        #expect(policy.verdict("https://a.test/%2F").action == .pass)
    }

    @Test("one policy evaluated from many tasks gives every task its own right answer")
    func concurrentEvaluation() async throws {
        let policy = try Policy(directory: bundledPoliciesPath)
        let cases: [(String, String, Verdict.Action)] = [
            ("GET", "https://www.rivalshop.com/cart", .block),
            ("GET", "https://search.rival.com/search?q=x", .redirect),
            ("GET", "https://careers.rivalshop.com/", .allow),
            ("GET", "https://paypa1.test/", .warn),
            ("POST", "https://api.example.com/v1/items", .pass),
        ]
        let mismatches = await withTaskGroup(of: Int.self) { group in
            for index in 0..<5_000 {
                group.addTask {
                    let (method, url, expected) = cases[index % cases.count]
                    return policy.evaluate(AuditRequest(method: method, url: url)).action == expected ? 0 : 1
                }
            }
            return await group.reduce(0, +)
        }
        #expect(mismatches == 0)
    }
}

@Suite struct VerdictValueTests {
    @Test("a verdict is four words, so a caller gets it in registers and drops it with a few releases")
    func verdictIsFourWords() {
        // Six words went through memory, and Swift dropped each field through value witnesses.
        #expect(MemoryLayout<Verdict>.size <= 4 * MemoryLayout<Int>.size)
    }

    @Test("verdicts are equal exactly when action, rule, redirect target, recorded rules and errors are")
    func verdictEquality() throws {
        let policy = try Policy(
            parsing: """
                [redirect https://b.test/]
                r ^https://a\\.test/
                [record]
                s ^https://
                """, file: "eq.rules")
        let redirect = policy.evaluate(AuditRequest(url: "https://a.test/x"))
        #expect(redirect.redirectTarget == "https://b.test/")
        #expect(redirect.errors.isEmpty && !redirect.hasErrors)
        #expect(redirect == policy.evaluate(AuditRequest(url: "https://a.test/y")))
        let sameButTarget = Verdict(
            action: redirect.action, rule: redirect.rule, redirectTarget: "https://c.test/", recorded: redirect.recorded
        )
        #expect(redirect != sameButTarget)
        let failure = EvaluationError(ruleID: "eq/r", reason: .invalidRedirectTarget("x"))
        let withError = Verdict(
            action: redirect.action, rule: redirect.rule, redirectTarget: redirect.redirectTarget,
            recorded: redirect.recorded, errors: [failure])
        #expect(withError.hasErrors && withError.errors == [failure])
        #expect(redirect != withError)
        #expect(Verdict(action: .pass) == Verdict(action: .pass, redirectTarget: nil, recorded: [], errors: []))
        #expect(Verdict(action: .pass).redirectTarget == nil)
    }
}
