import Testing

@testable import AuditRegex

@Suite struct LiteralPatternTests {
    @Test(
        "a pattern of plain ASCII characters and escaped punctuation is searched for without PCRE2",
        arguments: ["ttp", #"\/track\.ashx\?"#, "a-b_c=d&e%20", #"\{\}\]\\"#, "K"])
    func literalIsSearched(source: String) throws {
        #expect(try Pattern(source).isLiteral)
        #expect(try Pattern(source, caseInsensitive: true).isLiteral)
    }

    @Test(
        "a pattern with any metacharacter, escape letter, space or non-ASCII character is left to PCRE2",
        arguments: [
            "a.b", "^ttp", "ttp$", "a|b", "ab?", "a*", "a+", "(ab)", "[ab]", "a{2}", "a}", "a]", #"\d"#, #"\Qa.b\E"#,
            #"\x41"#, "a b", "caf\u{E9}", "",
        ])
    func nonLiteralIsLeftToPCRE2(source: String) throws {
        #expect(try Pattern(source).isLiteral == false)
    }

    @Test("a match limit below two is left to PCRE2, which may stop at it")
    func tinyLimitIsLeftToPCRE2() throws {
        #expect(try Pattern("ttp", limits: MatchLimits(matchLimit: 1, depthLimit: 100)).isLiteral == false)
        #expect(try Pattern("ttp", limits: MatchLimits(matchLimit: 2, depthLimit: 2)).isLiteral)
    }

    @Test("a caseless k or s matches the Kelvin sign and the long s, as PCRE2 folds them")
    func nonASCIIFolding() throws {
        #expect(try Pattern("kit", caseInsensitive: true).matches("https://x.test/\u{212A}it"))
        #expect(try Pattern("post", caseInsensitive: true).matches("https://x.test/po\u{17F}t"))
        #expect(try Pattern("kit").matches("https://x.test/\u{212A}it") == false)
        #expect(try Pattern("tip", caseInsensitive: true).matches("https://x.test/t\u{130}p") == false)
    }

    @Test("the search finds the string at the first and last place, across 16-byte blocks, in any case")
    func positions() throws {
        let pattern = try Pattern(#"Track\.ashx"#, caseInsensitive: true)
        for length in 0..<80 {
            let padding = String(repeating: "x", count: length)
            #expect(try pattern.matches("TRACK.ASHX" + padding))
            #expect(try pattern.matches(padding + "track.Ashx"))
            #expect(try pattern.matches(padding + "track-ashx" + padding) == false)
            #expect(try pattern.matches(String(padding.prefix(9))) == false)
        }
        #expect(try Pattern("Track").matches("track") == false)
    }

    @Test("on random subjects, literals answer as PCRE2 does, with and without case, on ill-formed UTF-8 too")
    func agreesWithPCRE2() throws {
        var generator = SplitMix64(seed: 0x5EED_11)
        // Short alphabets so that literals occur often; k, s and their non-ASCII folds included.
        let ascii: [[UInt8]] = ["t", "T", "p", "k", "K", "s", "S", "/", ".", "?", "a"].map { Array($0.utf8) }
        let pieces = ascii + [Array("\u{212A}".utf8), Array("\u{17F}".utf8), [0xC3], [0xFF], [0xE2, 0x84], [0x80]]
        let literals = ["ttp", "k", "Sk", "s/", #"t\.p"#, #"\?a"#, "tpkas", "p", "KK"]
        for source in literals {
            for caseInsensitive in [false, true] {
                let pattern = try Pattern(source, caseInsensitive: caseInsensitive)
                #expect(pattern.isLiteral)
                for _ in 0..<400 {
                    var bytes: [UInt8] = []
                    for _ in 0..<Int(generator.next() % 40) {
                        bytes += pieces[Int(generator.next() % UInt64(pieces.count))]
                    }
                    let subject = MatchSubject(bytes: bytes)
                    let byPCRE2 = try pattern.firstMatch(in: subject) != nil
                    #expect(try pattern.matches(subject) == byPCRE2, "\(source) \(caseInsensitive) \(bytes)")
                }
            }
        }
    }
}

/// A small seeded generator, so that a failure repeats.
private struct SplitMix64 {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
