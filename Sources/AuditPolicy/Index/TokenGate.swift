/// Two one-hash Bloom filters of token hashes in one array, two bits per slot: whether a token
/// may be a whole-token key, and whether it may start a pair key. About 64 slots per hash while
/// that fits 16 KiB, about 16 beyond, up to 512 KiB; one read answers both questions for a token
/// that is neither, as most are.
struct TokenGate: Sendable {
    static let mayBeKey: UInt8 = 1
    static let mayStartPair: UInt8 = 2

    private let words: [UInt64]
    private let mask: Int

    init(keys: [UInt64], pairStarts: [UInt64]) {
        let hashes = keys.count + pairStarts.count
        var slots = 4_096
        // A gate of 16 KiB stays in the first-level cache: up to that size, a quarter as many
        // tokens pass by chance at 64 slots per hash as at 16.
        while slots < hashes * 64, slots < 1 << 16 { slots *= 2 }
        while slots < hashes * 16, slots < 1 << 21 { slots *= 2 }
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
