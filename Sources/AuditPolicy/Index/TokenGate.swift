/// Two one-hash Bloom filters of token hashes in one array, two bits per slot: whether a token
/// may be a whole-token key, and whether it may start a pair key. About 16 slots per hash, between
/// 1 KiB and 512 KiB; one read answers both questions for a token that is neither, as most are.
struct TokenGate: Sendable {
    static let mayBeKey: UInt8 = 1
    static let mayStartPair: UInt8 = 2

    private let words: [UInt64]
    private let mask: Int

    init(keys: [UInt64], pairStarts: [UInt64]) {
        var slots = 4_096
        while slots < (keys.count + pairStarts.count) * 16, slots < 1 << 21 { slots *= 2 }
        var words = [UInt64](repeating: 0, count: slots / 32)
        for (hashes, flag) in [(keys, Self.mayBeKey), (pairStarts, Self.mayStartPair)] {
            for hash in hashes {
                let slot = Self.slot(hash, mask: slots - 1)
                words[slot >> 5] |= UInt64(flag) << UInt64(2 * (slot & 31))
            }
        }
        self.words = words
        mask = slots - 1
    }

    @inline(__always)
    private static func slot(_ hash: UInt64, mask: Int) -> Int {
        Int(truncatingIfNeeded: hash &>> 40) & mask
    }

    /// Calls `body` with the gate's words and slot mask, for the C kernel `index_hash_tokens`, which marks tokens by it.
    func withWords<Result>(_ body: (Span<UInt64>, UInt64) -> Result) -> Result {
        body(words.span, UInt64(mask))
    }

    /// ``mayBeKey`` and ``mayStartPair`` for a token with hash `hash`: never clear for a key or a
    /// pair start, now and then set for other tokens.
    @inline(__always)
    func flags(_ hash: UInt64) -> UInt8 {
        let slot = Self.slot(hash, mask: mask)
        let word = words[slot &>> 5]
        return UInt8(truncatingIfNeeded: word &>> UInt64(truncatingIfNeeded: 2 &* (slot & 31))) & 3
    }
}
