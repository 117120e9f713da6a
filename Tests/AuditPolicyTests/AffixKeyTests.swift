import AuditPolicy
import Testing

/// Rules filed by the start or the end of a token (`/collect` needs a token that starts with
/// `collect`; `script\.js` one that ends with `script`) are found whatever the rest of the token,
/// in any case, for keys of one to three bytes (judged by a token's first or last two bytes) and
/// of four or more (judged by its first or last four).
@Suite struct AffixKeyTests {
    static let policy: Policy = {
        do {
            return try Policy(
                parsing: """
                    [record]
                    long-prefix (?i)/collect
                    short-prefix /ab
                    long-suffix (?i)script\\.js
                    short-suffix yz\\.
                    four-byte-prefix /pixl
                    """, file: "affix.rules")
        } catch {
            preconditionFailure("\(error)")
        }
    }()

    @Test("the five rules are filed by token start or end")
    func statistics() {
        #expect(Self.policy.indexStatistics.byTokenAffix == 5)
        #expect(Self.policy.indexStatistics.alwaysRun == 0)
    }

    @Test(
        "a token that starts or ends with a key finds its rule, and only such a token",
        arguments: [
            ("https://a.test/collect", ["affix/long-prefix"]),
            ("https://a.test/COLLECTOR?x=1", ["affix/long-prefix"]),
            ("https://a.test/x/Collect9", ["affix/long-prefix"]),
            ("https://a.test/xcollect", []),
            ("https://a.test/coll", []),
            ("https://a.test/abc", ["affix/short-prefix"]),
            ("https://a.test/ab", ["affix/short-prefix"]),
            ("https://a.test/a", []),
            ("https://a.test/myscript.js", ["affix/long-suffix"]),
            ("https://a.test/MYSCRIPT.JS", ["affix/long-suffix"]),
            ("https://a.test/script.js", ["affix/long-suffix"]),
            ("https://a.test/scripts.js", []),
            ("https://a.test/xyz.gif", ["affix/short-suffix"]),
            ("https://a.test/yz.gif", ["affix/short-suffix"]),
            ("https://a.test/z.gif", []),
            ("https://a.test/pixl", ["affix/four-byte-prefix"]),
            ("https://a.test/pix", []),
            (
                "https://a.test/abcollect/wxyz.script.js",
                ["affix/long-suffix", "affix/short-prefix", "affix/short-suffix"]
            ),
        ])
    func found(example: (url: String, rules: [String])) {
        let request = AuditRequest(url: example.url)
        #expect(Self.policy.candidateRules(for: request).map(\.id).sorted() == example.rules)
        #expect(Self.policy.evaluate(request) == Self.policy.evaluateEveryRule(request))
    }
}
