import AuditPolicy
import Testing

/// Rules filed by letters inside a token (`ttp` needs neither a token start nor a token end) are
/// found wherever the letters stand inside a token, whether the policy has a few such keys (the
/// subject is searched for each) or many (each position of each token is checked).
@Suite struct InfixKeyTests {
    /// Rules whose only key is an infix: `…ttp…`, `…q7x…`, plus `extra` more of the same kind.
    static func policy(extra: Int) throws -> Policy {
        let filler = (0..<extra).map { "f\($0) z\($0)w\($0)q" }.joined(separator: "\n")
        return try Policy(parsing: "[record]\nttp ttp\nqx (?i)q7x\n\(filler)\n", file: "infix.rules")
    }

    @Test("infix rules are filed as such, a few or many", arguments: [0, 20])
    func statistics(extra: Int) throws {
        #expect(try Self.policy(extra: extra).indexStatistics.byInfix == 2 + extra)
    }

    @Test(
        "letters inside a token find their rule, in any case and at any place in the URL",
        arguments: [0, 20],
        [
            ("http://a.test/", ["infix/ttp"]),
            ("https://a.test/AQ7Xb", ["infix/ttp", "infix/qx"]),
            ("ftp://a.test/?v=q7x", ["infix/qx"]),
            ("ftp://a.test/?zzQ7X", ["infix/qx"]),
            ("https://a.b/xxxxxxxxQ7Xxxxxxxxxxxxxx", ["infix/ttp", "infix/qx"]),
            ("https://a.b/xyzQ7Xxxxxxxxxxxxxxxx", ["infix/ttp", "infix/qx"]),
            ("https://a.b/xyzq7-q7Q7xxxxxxxxxxxx", ["infix/ttp", "infix/qx"]),
            ("HTTPS://A.B/XXXXXXXXXXXXXXXXXXXXXXXXXXXXX", ["infix/ttp"]),
            ("ftp://a.test/q-7x", []),
            ("ftp://a.test/q7", []),
            ("tt", []),
        ])
    func found(extra: Int, example: (url: String, rules: [String])) throws {
        let policy = try Self.policy(extra: extra)
        let request = AuditRequest(url: example.url)
        let candidates = policy.candidateRules(for: request).map(\.id).filter { !$0.hasPrefix("infix/f") }
        #expect(candidates == example.rules)
        #expect(policy.evaluate(request) == policy.evaluateEveryRule(request))
    }

    @Test(
        "a few infix keys in capitals are found at every position of URLs of every length, and nowhere else",
        arguments: [("Q7X", "infix/qx"), ("TTP", "infix/ttp")])
    func everyPosition(example: (key: String, rule: String)) throws {
        // Sixteen positions are searched at a time while seventeen bytes are left, then eight,
        // then one: every length and position crosses each of those edges.
        let policy = try Self.policy(extra: 0)
        let opening = "ftp://a.test/"
        for length in opening.utf8.count + 3...opening.utf8.count + 60 {
            let fill = length - opening.utf8.count
            #expect(
                policy.candidateRules(for: AuditRequest(url: opening + String(repeating: "t", count: fill))).isEmpty)
            for position in 0...fill - 3 {
                let path =
                    String(repeating: "t", count: position) + example.key
                    + String(repeating: "p", count: fill - 3 - position)
                let request = AuditRequest(url: opening + path)
                #expect(policy.candidateRules(for: request).map(\.id) == [example.rule], "\(request.url)")
            }
        }
    }

    @Test("with many infix keys, each found in a long URL finds its rule", arguments: [0, 20])
    func manyInOneURL(extra: Int) throws {
        let policy = try Self.policy(extra: extra)
        let path = (0..<extra).map { "X\($0)Z\($0)W\($0)Qy" }.joined(separator: "/")
        let request = AuditRequest(url: "https://a.test/" + path)
        let expected = ["infix/ttp"] + (0..<extra).map { "infix/f\($0)" }
        #expect(policy.candidateRules(for: request).map(\.id).sorted() == expected.sorted())
        #expect(policy.evaluate(request) == policy.evaluateEveryRule(request))
    }
}
