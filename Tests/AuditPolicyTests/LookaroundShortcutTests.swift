import Testing

@testable import AuditPolicy

/// Lookarounds in a shortcut's pattern. A pattern with lookarounds inside it is answered by the
/// automaton of the pattern without them, whose matches are the pattern's and more: where it finds
/// none, the pattern has none; where it finds one, PCRE2 decides, unless the lookarounds are
/// negative lookaheads over fixed text the URL does not contain. A pattern of fixed characters
/// closed by such a lookahead is exact where the URL lacks its text.
@Suite struct LookaroundShortcutTests {
    /// The verdict of a policy of the one rule `pattern` (run for every request) for `url`, checked
    /// against matching the rule with PCRE2.
    private static func verdict(of pattern: String, url: String) throws -> Verdict {
        let policy = try Policy(parsing: "[block]\nrule \(pattern)\n", file: "relaxed.rules")
        let request = AuditRequest(url: url)
        let verdict = policy.evaluate(request)
        #expect(verdict == policy.evaluateEveryRule(request))
        return verdict
    }

    static let negative = ":\\/\\/([a-z-]{4,10}\\.)?(?!aniqit|kodikapi)[a-z0-9]{4,}\\.(video|com|ru)"
    static let positive = "^https?:\\/\\/[a-z]+\\/[a-z](?=[a-z]{0,5}[0-9])[0-9a-z]{3,8}\\/"

    @Test(
        "a pattern with a lookahead inside gets the automaton of the pattern without it",
        arguments: [
            (negative, true), (positive, false), ("\\bads\\b[0-9]+", false), ("(?<=\\/)cdn[a-z]+\\.", false),
        ])
    func relaxedAutomaton(pattern: String, answersMatches: Bool) throws {
        let shortcut = try #require(RuleShortcut(pattern: pattern, caseInsensitive: false))
        #expect(shortcut.automaton != nil)
        #expect(shortcut.isRelaxedAutomaton)
        #expect((shortcut.relaxedUnless != nil) == answersMatches)
    }

    @Test(
        "a negative lookahead over fixed text inside a pattern: the verdicts PCRE2 gives",
        arguments: [
            // The lookahead's texts are absent: the pattern matches where it would without it.
            ("https://kodik.com/x", true),
            ("https://player.video-cdn.ru/x", true),
            // Absent, and the pattern without the lookahead does not match either.
            ("https://kodik.org/x", false),
            // Present: PCRE2 decides, with the lookahead.
            ("https://aniqit.com/x", false),
            ("https://player.aniqit.com/x", false),
            ("https://aniqit.tv/kodikapi/ok.abcd.ru/x", false),
            ("https://kodikapi.tv/x?u=https://abcd.video", true),
        ])
    func negativeLookahead(url: String, matches: Bool) throws {
        #expect(try Self.verdict(of: Self.negative, url: url).action == (matches ? .block : .pass))
    }

    @Test(
        "a positive lookahead inside a pattern: the verdicts PCRE2 gives",
        arguments: [
            ("https://abc/x12ab/", true),
            // Without the lookahead the pattern would match; with it, it does not.
            ("https://abc/xabcdef/", false),
            // Neither with nor without it.
            ("https://abc/x/", false),
            ("https://a.b/x12ab/", false),
        ])
    func positiveLookahead(url: String, matches: Bool) throws {
        #expect(try Self.verdict(of: Self.positive, url: url).action == (matches ? .block : .pass))
    }

    @Test("a lookahead whose own backtracking can grow exponentially gives no automaton")
    func exponentialLookahead() throws {
        let pattern = "k(?=(.{2,4}|js)+CDN)[a-z]+"
        #expect(RuleShortcut(pattern: pattern, caseInsensitive: false)?.automaton == nil)
        // PCRE2 reaches its match limit trying the lookahead, and the verdict says so.
        let verdict = try Self.verdict(
            of: pattern, url: "https://cdn.test/k" + String(repeating: "abcdefghin", count: 6))
        #expect(verdict.action == .block)
        #expect(verdict.errors.map(\.ruleID) == ["relaxed/rule"])
    }

    @Test(
        "a lookaround's cost shortens the subjects the automaton answers: a power of their length, or a factor for fixed text"
    )
    func lookaroundCostsInTheBound() throws {
        func longestSubject(_ pattern: String) throws -> Int {
            try #require(RuleShortcut(pattern: pattern, caseInsensitive: false)?.automaton).longestSubject
        }
        let without = try longestSubject("[a-z]+x[0-9]+\\/")
        let fixedText = try longestSubject("[a-z]+x(?!abc|de)[0-9]+\\/")
        let growing = try longestSubject("[a-z]+x(?=[a-z0-9]*\\/)[0-9]+\\/")
        // One repetition that can end in several places: (n + 1)^2 steps, times 5 for the
        // lookahead's characters, or times n + 1 for a lookahead that reads on.
        #expect(without == 999)
        #expect(fixedText == 446)
        #expect(growing == 99)
    }

    static let closing = "(?:buzz|com|icu)\\/(?!shrinker|cut\\/).*"

    @Test(
        "fixed characters closed by a negative lookahead over fixed text: exact where the text is absent",
        arguments: [
            ("https://a.com/x", true),
            ("https://a.org/x", false),
            // The text is there: where it follows every `com/`, no match; elsewhere, a match.
            ("https://a.com/shrinker/x", false),
            ("https://a.com/cut/x", false),
            ("https://a.com/shrinker/b.icu/x", true),
            ("https://a.net/shrinker?u=buzz/", true),
        ])
    func closingLookahead(url: String, matches: Bool) throws {
        let shortcut = try #require(RuleShortcut(pattern: Self.closing, caseInsensitive: false))
        #expect(shortcut.exactUnless != nil)
        #expect(try Self.verdict(of: Self.closing, url: url).action == (matches ? .block : .pass))
    }
}
