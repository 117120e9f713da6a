import AuditRegex
import Testing

@Suite struct PatternCompileTests {
    @Test("a valid pattern compiles and reports its capture groups")
    func compilesWithGroups() throws {
        let pattern = try Pattern(#"^https://([a-z]+)\.example\.com/(\d+)?"#)
        #expect(pattern.captureGroupCount == 2)
    }

    @Test("the JIT compiler is used on this platform")
    func usesJIT() throws {
        #expect(try Pattern("^abc").isJITCompiled)
    }

    @Test("a compile error carries PCRE2's message and the column of the fault")
    func compileErrorColumn() {
        #expect(throws: PatternError.invalidPattern(message: "missing closing parenthesis", column: 10)) {
            try Pattern("^(abc|def")
        }
    }

    @Test("the error column counts characters, not bytes, after non-ASCII text")
    func compileErrorColumnAfterUnicode() {
        // "é" is two bytes; the stray ')' is the 4th character.
        #expect(throws: PatternError.invalidPattern(message: "unmatched closing parenthesis", column: 4)) {
            try Pattern("aéb)")
        }
    }

    @Test("the linked library reports a version")
    func libraryVersion() {
        #expect(Pattern.libraryVersion.hasPrefix("10."))
    }
}

@Suite struct PatternMatchTests {
    @Test("matching is case-sensitive unless asked otherwise")
    func caseSensitivity() throws {
        #expect(try Pattern("rival").matches("RIVAL.com") == false)
        #expect(try Pattern("rival", caseInsensitive: true).matches("RIVAL.com"))
    }

    @Test("captures come back as texts and byte ranges, unset groups as nil")
    func captures() throws {
        let pattern = try Pattern(#"q=([^&]*)(&page=(\d+))?"#)
        let match = try #require(try pattern.firstMatch(in: "https://s.rival.com/search?q=shoes"))
        #expect(match.groups == ["q=shoes", "shoes", nil, nil])
        #expect(match.ranges[1] == 29..<34)
        #expect(match[7] == nil)
    }

    @Test("groups over multi-byte characters decode whole")
    func unicodeCaptures() throws {
        let match = try Pattern(#"/wiki/(.+)$"#).firstMatch(in: "https://de.wikipedia.org/wiki/Straße_日本")
        #expect(match?[1] == "Straße_日本")
    }

    @Test("a dot matches one whole character of a UTF-8 subject")
    func dotMatchesCharacter() throws {
        #expect(try Pattern("^a.b$").matches("aéb"))
    }

    @Test("invalid UTF-8 bytes are never matched and never crash")
    func invalidUTF8() throws {
        let subject = MatchSubject(bytes: Array("https://x.test/".utf8) + [0xC3, 0x28, 0xFF] + Array("/tail".utf8))
        #expect(try Pattern("tail$").matches(subject))
        #expect(try Pattern(#"x\.test/.\("#).matches(subject) == false)
        #expect(try Pattern(#"x\.test/(.*)tail"#).firstMatch(in: subject) == nil)
    }

    @Test("a subject made of a string matches, captures and compares like one made of its bytes")
    func stringSubject() throws {
        let text = "https://x.test/caf\u{E9}?q=1"
        let fromText = MatchSubject(text)
        let fromBytes = MatchSubject(bytes: Array(text.utf8))
        #expect(fromText == fromBytes)
        #expect(fromText.hashValue == fromBytes.hashValue)
        #expect(fromText.bytes == Array(text.utf8))
        #expect(try Pattern("caf\u{E9}\\?q").matches(fromText))
        let match = try Pattern(#"/(\w+)(.)\?"#).firstMatch(in: fromText)
        #expect(match?.groups == ["/caf\u{E9}?", "caf", "\u{E9}"])
        #expect(MatchSubject("a") != MatchSubject(bytes: Array("b".utf8)))
    }

    @Test("NUL bytes in the subject are ordinary characters")
    func nulBytes() throws {
        let subject = MatchSubject(bytes: Array("a".utf8) + [0] + Array("b".utf8))
        #expect(try Pattern("a\\x00b").matches(subject))
    }

    @Test("an empty subject matches an empty-accepting pattern")
    func emptySubject() throws {
        #expect(try Pattern("^$").matches(""))
        #expect(try Pattern("a").matches("") == false)
    }

    @Test("catastrophic backtracking stops at the match limit instead of hanging")
    func matchLimit() throws {
        let pattern = try Pattern("(a+)+$", limits: MatchLimits(matchLimit: 10_000, depthLimit: 10_000))
        let subject = String(repeating: "a", count: 40) + "!"
        #expect(throws: PatternError.matchLimitExceeded) { try pattern.matches(subject) }
    }

    @Test("the default limits stop a catastrophic pattern on a long URL")
    func defaultLimitOnLongURL() throws {
        let pattern = try Pattern(#"^https?://(\w+\.?)+\.example$"#)
        let subject = "https://" + String(repeating: "a", count: 5_000) + ".examplX"
        #expect(throws: PatternError.matchLimitExceeded) { try pattern.matches(subject) }
    }

    @Test("a match deeper than the JIT's machine stack is answered by the interpreter")
    func jitStackFallback() throws {
        // Each repetition of the group leaves a backtracking point: 40,000 of them overflow the
        // JIT's 32 KiB stack, and fit the interpreter's heap.
        let pattern = try Pattern("^(?:a|b)*c$")
        let subject = String(repeating: "ab", count: 20_000) + "c"
        #expect(try pattern.matches(subject))
        #expect(try pattern.matches(MatchSubject(bytes: Array(subject.utf8))))
        #expect(try pattern.firstMatch(in: subject)?.ranges.first == 0..<40_001)
        #expect(try pattern.matches(String(subject.dropLast())) == false)
    }

    @Test("one pattern answers correctly from many tasks at once")
    func concurrentMatching() async throws {
        let pattern = try Pattern(#"^https://([a-z]+)\.test/(\d+)$"#)
        let results = await withTaskGroup(of: Bool.self) { group in
            for index in 0..<2_000 {
                group.addTask {
                    let host = index.isMultiple(of: 2) ? "even" : "ODD"
                    let match = try? pattern.firstMatch(in: "https://\(host).test/\(index)")
                    return index.isMultiple(of: 2) ? match?[2] == String(index) : match == nil
                }
            }
            return await group.reduce(into: [Bool]()) { $0.append($1) }
        }
        #expect(results.count == 2_000)
        #expect(results.allSatisfy { $0 })
    }
}
