import Testing

@testable import AuditPolicy

/// The search for a few infix keys' first two bytes (`index_next_pair_start`, sixteen positions at
/// a time) against the same question asked byte by byte.
@Suite struct PairSearchTests {
    /// Keys of one to three bytes from `a0x7`.
    private static func keys(using random: inout SystemRandomNumberGenerator) -> Set<[UInt8]> {
        let bytes = Array("a0x7".utf8)
        var keys: Set<[UInt8]> = []
        for _ in 0..<Int.random(in: 1...5, using: &random) {
            keys.insert(
                (0..<Int.random(in: 1...3, using: &random)).map { _ in bytes[Int.random(in: 0..<4, using: &random)] })
        }
        return keys
    }

    /// Where byte by byte finds a pair of `active` from `index` on, before the last byte, the
    /// bytes with bit 5 set.
    private static func expected(
        _ subject: [UInt8], from index: Int, _ keys: RuleIndex.FieldGroup.FewKeys, active: UInt32
    )
        -> Int?
    {
        guard index < subject.count - 1 else { return nil }
        for position in index..<subject.count - 1 {
            for pair in keys.keysByPair.indices where active & 1 << UInt32(pair) != 0 {
                let hasSecond = keys.pairsWithoutSecond & 1 << UInt32(pair) == 0
                if subject[position] | 0x20 == keys.pairFirsts[pair],
                    !hasSecond || subject[position + 1] | 0x20 == keys.pairSeconds[pair]
                {
                    return position
                }
            }
        }
        return nil
    }

    @Test(
        "the pair search finds the first place of an active pair from a given position, in either case, in subjects of every length"
    )
    func agreesWithByteByByte() throws {
        // Capitals, and 0x10 and 0x17 (which pass as `0` and `7` with bit 5 set), beside the keys'
        // own bytes, so that positions are found often and some are found by bit 5 alone.
        let subjectBytes = Array("a0x7AX/.-%".utf8) + [0x10, 0x17, 0x80, 0xFF]
        var random = SystemRandomNumberGenerator()
        for _ in 0..<3_000 {
            let keys = try #require(RuleIndex.FieldGroup.FewKeys(Self.keys(using: &random)))
            let subject = (0..<Int.random(in: 0...80, using: &random)).map { _ in
                subjectBytes[Int.random(in: subjectBytes.indices, using: &random)]
            }
            let active = UInt32.random(in: 0...UInt32.max, using: &random) & (1 << UInt32(keys.keysByPair.count) - 1)
            let index = Int.random(in: 0...subject.count, using: &random)
            let found = keys.nextPairStart(in: subject.span, from: index, active: active)
            #expect(found == Self.expected(subject, from: index, keys, active: active), "\(subject) from \(index)")
        }
    }
}
