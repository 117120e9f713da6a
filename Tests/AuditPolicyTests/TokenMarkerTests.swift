import Testing

@testable import AuditPolicy

@Suite struct TokenMarkerTests {
    /// Random subjects: tokens of one to twelve letters and digits in either case, between
    /// separators.
    private static func subject(using random: inout SystemRandomNumberGenerator) -> [UInt8] {
        let letters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789".utf8)
        let separators = Array("/.:?&=_-%".utf8)
        var bytes: [UInt8] = []
        for _ in 0..<Int.random(in: 0...90, using: &random) {
            for _ in 0..<Int.random(in: 1...12, using: &random) {
                bytes.append(letters[Int.random(in: letters.indices, using: &random)])
            }
            bytes.append(separators[Int.random(in: separators.indices, using: &random)])
        }
        // Half the subjects end with a token, one byte long now and then.
        if Bool.random(using: &random) { bytes.append(letters[Int.random(in: letters.indices, using: &random)]) }
        return bytes
    }

    @Test(
        "the C hasher marks exactly the tokens a gate lets through, in order, with what let them"
    )
    func markerAgreesWithTheGates() {
        var random = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            let bytes = Self.subject(using: &random)
            let buffer = bytes.span
            TokenHashes.withTokens(ofSubjectLength: buffer.count) { tokens in
                _ = tokens.append(tokensOf: buffer)
                let all = tokens.tokens
                // Some of the subject's own tokens are keys and pair starts, so that some pass.
                let some = all.filter { _ in Int.random(in: 0..<5, using: &random) == 0 }
                let half = some.count / 2
                let gate = TokenGate(
                    keys: some.prefix(half).map(\.hash), pairStarts: some.dropFirst(half).map(\.hash))
                let authorityGate = TokenGate(
                    keys: some.dropFirst(half).map(\.hash), pairStarts: some.prefix(half).map(\.hash))
                let authorityStart = Int.random(in: 0...bytes.count, using: &random)
                let authority = authorityStart..<Int.random(in: authorityStart...bytes.count, using: &random)
                // Start and end keys of one to six bytes: some are the starts and ends of the
                // subject's own tokens, so that some tokens may have them.
                var prefixes = AffixGate.Builder()
                var suffixes = AffixGate.Builder()
                for token in all where Int.random(in: 0..<6, using: &random) == 0 {
                    let lowered = bytes[Int(token.start)..<Int(token.end)].map { $0 | 0x20 }
                    prefixes.insert(lowered.prefix(Int.random(in: 1...6, using: &random)))
                    suffixes.insert(lowered.reversed().prefix(Int.random(in: 1...6, using: &random)))
                }
                let (prefixGate, suffixGate) = (prefixes.gate, suffixes.gate)
                for reads in 0..<16 {
                    let (readsGate, readsPrefixes, readsSuffixes) = (reads & 4 != 0, reads & 2 != 0, reads & 1 != 0)
                    let readsAuthority = reads & 8 != 0
                    let expected = all.indices.compactMap { index -> Int? in
                        let (token, start, end) = (all[index], Int(all[index].start), Int(all[index].end))
                        let marks =
                            (readsGate ? Int(gate.flags(token.hash)) : 0)
                            | (readsPrefixes && prefixGate.mayMatch(bytes.span, start, end, backwards: false) ? 4 : 0)
                            | (readsSuffixes && suffixGate.mayMatch(bytes.span, start, end, backwards: true) ? 8 : 0)
                            | (readsAuthority && authority.contains(start)
                                ? Int(authorityGate.flags(token.hash)) << 4 : 0)
                        return marks == 0 ? nil : index << 6 | marks
                    }
                    let marking = TokenMarking(
                        gate: gate, readsGate: readsGate, prefixes: prefixGate, readsPrefixes: readsPrefixes,
                        suffixes: suffixGate, readsSuffixes: readsSuffixes, authorityGate: authorityGate,
                        readsAuthority: readsAuthority)
                    let marked = TokenHashes.withTokens(ofSubjectLength: buffer.count) { markedTokens in
                        _ = markedTokens.append(tokensOf: buffer, marking: marking, authority: authority)
                        #expect(markedTokens.tokens.map(\.hash) == all.map(\.hash))
                        return (0..<markedTokens.markedCount).map { Int(markedTokens.marked($0)) }
                    }
                    #expect(marked == expected, "\(String(decoding: bytes, as: UTF8.self))")
                }
            }
        }
    }

    @Test("tokens asked one by one in Swift, as for a subject too long to mark, find the rules the hasher's marks find")
    func unmarkedSubjectsFindTheSameRules() throws {
        for seed in [5 as UInt64, 6] {
            let policy = try IndexDifferentialTests.policy(seed: seed, rules: 1_500, urlOnly: true)
            var random = IndexDifferentialTests.Generator(state: seed &* 31)
            var found = 0
            for _ in 0..<1_500 {
                let url = AuditRequest(url: IndexDifferentialTests.url(&random)).normalizedURL
                let bytes = Array(url.utf8)
                for group in policy.index.groups {
                    let marked = Self.candidates(of: group, in: bytes.span, marksTokens: true)
                    let asked = Self.candidates(of: group, in: bytes.span, marksTokens: false)
                    found += marked.count
                    #expect(marked == asked, "\(url)")
                }
            }
            #expect(found > 1_000)  // the URLs do reach rules
        }
    }

    /// The rules `group` collects for `bytes`, in order.
    private static func candidates(
        of group: RuleIndex.FieldGroup, in bytes: Span<UInt8>, marksTokens: Bool
    ) -> [Int32] {
        CandidateList.withEmptyList { candidates in
            _ = group.collect(in: bytes, into: &candidates, requiringASCII: false, marksTokens: marksTokens)
            return candidates.rules.sorted()
        }
    }
}
