import Testing

@testable import AuditPolicy

private let hostOpening = #"^[a-z][a-z0-9+.-]*:/+(?:[^/?#]*\.)?"#
private let hostEnding = "(?:[^a-z0-9_.%-]|$)"

/// Runs of literal characters as a rule file writes them: letters of both cases, digits, plain
/// punctuation and escaped punctuation, starting and ending with letters and punctuation alike.
private func generatedRuns(count: Int) -> [String] {
    var random = SystemRandomNumberGenerator()
    let pieces = [
        "a", "Q", "z", "k", "s", "0", "7", "ads", "Example", "42", "-", "_", "/", ":", "%", "=", "&", ",",
        #"\."#, #"\/"#, #"\?"#, #"\-"#, #"\$"#, #"\\"#, ##"\#"##, #"\*"#,
    ]
    return (0..<count).map { _ in
        (0..<Int.random(in: 1...6, using: &random)).map { _ in pieces[Int.random(in: pieces.indices, using: &random)] }
            .joined()
    }
}

/// A price that differs from key to key in no simple order, so that a different option list
/// would show as a different choice.
private func scrambledCost(_ key: IndexKey) -> Double {
    key.cost * (1 + Double(key.text.reduce(7) { ($0 &* 31 &+ Int($1)) % 97 }) / 97)
}

@Suite struct LiteralShapeTests {
    @Test(
        "a rule of a known shape is filed exactly as reading its syntax files it",
        arguments: [hostOpening, "^", ""], [hostEnding, "$", ""]
    )
    func shapeFilingMatchesSyntax(opening: String, ending: String) {
        for run in generatedRuns(count: 400) {
            let pattern = opening + run + ending
            for caseless in [false, true] {
                #expect(LiteralShape(pattern, caseless: caseless) != nil, "\(pattern) is not read as a shape")
                let shaped = RequirementAnalysis.filing(of: pattern, caseInsensitive: caseless, cost: scrambledCost)
                let read = RequirementAnalysis.filing(
                    of: pattern, caseInsensitive: caseless, cost: scrambledCost, readsShapes: false)
                #expect(shaped == read, "\(pattern) caseless: \(caseless)")
            }
        }
    }

    @Test(
        "a literal run's keys are its segments, then each two neighbouring whole tokens as a pair",
        arguments: [
            ("ads.example.com", true, true, ["ads", "example", "com", "ads.example", "example.com"]),
            ("ads.example.com", false, true, ["…ads", "example", "com", "example.com"]),
            ("ads.example.com", true, false, ["ads", "example", "com…", "ads.example"]),
            ("182.121.224.46", true, true, ["182", "121", "224", "46", "182.121", "121.224", "224.46"]),
            ("ads", true, true, ["ads"]),
            ("/Banner//Top-", true, true, ["banner", "top", "banner.top"]),
        ])
    func runKeys(run: String, leftBounded: Bool, rightBounded: Bool, expected: [String]) {
        let keys = RequirementAnalysis.keys(in: Array(run.utf8), leftBounded: leftBounded, rightBounded: rightBounded)
        #expect(keys.map(\.description) == expected)
    }

    @Test("a key chosen by price but too common to be worth an entry gives way to the cheapest key by cost")
    func priceFallsBackToCost() {
        // Priced as if many rules used them already: every key but the token start `s…`, which
        // keeps its cost, 1 (no better than running the rule every time).
        let price: (IndexKey) -> Double = { $0.kind == .tokenPrefix ? $0.cost : 100 }
        let banner = Requirement.key(IndexKey(kind: .token, text: Array("banner".utf8)))
        let pixel = Requirement.key(IndexKey(kind: .token, text: Array("pixel".utf8)))
        let single = RequirementAnalysis.filing(of: "/s[a-z]*/banner/", caseInsensitive: true, cost: price)
        #expect(single?.requirement == banner)
        let alternatives = RequirementAnalysis.filing(
            of: "/s[a-z]*/banner/|/s[a-z]*/pixel/", caseInsensitive: true, cost: price)
        #expect(alternatives?.requirement == .anyOf([banner, pixel]))
    }

    @Test("a pair key's hash is the one a scan makes from its two tokens' hashes")
    func pairHash() {
        let pair = IndexKey.pair(Array("ads".utf8), Array("example".utf8))
        let ads = IndexKey(kind: .token, text: Array("ads".utf8)).hashValue64
        let example = IndexKey(kind: .token, text: Array("example".utf8)).hashValue64
        #expect(pair.hashValue64 == IndexKey.pairHash(ads, example))
        #expect(pair.hashValue64 != IndexKey.pairHash(example, ads))
    }

    @Test("an ad-block host rule is a shape whose host is bounded by tokens on both sides when caseless")
    func hostRuleEdges() throws {
        let caseless = try #require(LiteralShape(hostOpening + #"ads\.example\.com"# + hostEnding, caseless: true))
        #expect(caseless.run == Array("ads.example.com".utf8))
        #expect(caseless.isLeftBounded)
        #expect(caseless.isRightBounded)
        // When case matters, [^a-z0-9_.%-] admits capital letters after the host.
        let exact = try #require(LiteralShape(hostOpening + #"ads\.example\.com"# + hostEnding, caseless: false))
        #expect(exact.isLeftBounded)
        #expect(!exact.isRightBounded)
    }

    @Test(
        "a pattern that only looks like a shape is left to the syntax reader",
        arguments: [
            "^abc*", #"^a\d"#, "(?i)abc", #"abc\"#, "^", "", "a.b", "a b", "a|b", "a(b)", #"\Qab\E"#, "a{2}", "ab$c",
            hostOpening + "a+" + hostEnding, hostOpening + hostEnding, "^ké",
        ]
    )
    func lookalikesAreRead(pattern: String) {
        #expect(LiteralShape(pattern, caseless: true) == nil)
    }
}
