/// Whether a token may start with one of a set of keys (or, read backwards, end with one): keys
/// of one to three bytes are judged by the token's first two bytes, longer ones by its first
/// four, in a one-hash Bloom filter of about 16 bits per key (512 bits at least).
struct AffixGate: Sendable {
    /// Collects the keys of a gate.
    struct Builder {
        private var short = BytePairSet()
        private var quads: [UInt32] = []

        /// Adds a key, in the order the gate reads tokens (a suffix key last byte first).
        mutating func insert<Key: Collection<UInt8>>(_ key: Key) {
            let bytes = Array(key)
            guard bytes.count >= 4 else {
                short.insert(bytes[0], then: bytes.count > 1 ? bytes[1] : nil, length: bytes.count)
                return
            }
            quads.append(bytes.prefix(4).reversed().reduce(0) { $0 << 8 | UInt32($1) })
        }

        var gate: AffixGate { AffixGate(short: short, quads: quads) }
    }

    private let short: BytePairSet
    private let hasShortKeys: Bool
    private let words: [UInt64]
    private let shift: UInt32

    private init(short: BytePairSet, quads: [UInt32]) {
        self.short = short
        hasShortKeys = short.hasPairs
        var bitCount = 9
        while 1 << bitCount < quads.count * 16, bitCount < 20 { bitCount += 1 }
        shift = UInt32(32 - bitCount)
        var words = [UInt64](repeating: 0, count: (1 << bitCount) / 64)
        for quad in quads {
            let bit = Self.bit(quad, shift: shift)
            words[bit >> 6] |= 1 << UInt64(bit & 63)
        }
        self.words = words
    }

    @inline(__always)
    private static func bit(_ quad: UInt32, shift: UInt32) -> Int {
        Int(truncatingIfNeeded: (quad &* 0x9E37_79B1) &>> shift)
    }

    /// Calls `body` with the short keys' pair set, the Bloom filter's words and its shift, for the C
    /// kernel `index_hash_tokens`, which marks tokens by the gate.
    func withWords<Result>(_ body: (Span<UInt64>, Span<UInt64>, UInt32) -> Result) -> Result {
        short.withWords { shortPairs in body(shortPairs, words.span, shift) }
    }

    /// Whether the token `bytes[start..<end]` may start with a key (`backwards`: end with one);
    /// never false when it does.
    @inline(__always)
    func mayMatch(_ bytes: Span<UInt8>, _ start: Int, _ end: Int, backwards: Bool) -> Bool {
        let length = end &- start
        if length >= 4 {
            // Every byte of a token is a letter or digit: setting bit 5 lower-cases it. Read
            // backwards, the last byte comes first, as in the key.
            var quad = bytes.word32(at: backwards ? end &- 4 : start)
            if backwards { quad = quad.byteSwapped }
            let bit = Self.bit(quad | 0x2020_2020, shift: shift)
            if words[bit &>> 6] & (1 &<< UInt64(truncatingIfNeeded: bit)) != 0 {
                return true
            }
        }
        guard hasShortKeys else { return false }
        let first = RuleIndex.FieldGroup.loweredInToken(bytes[backwards ? end &- 1 : start])
        let second = length > 1 ? RuleIndex.FieldGroup.loweredInToken(bytes[backwards ? end &- 2 : start &+ 1]) : 0
        return short.contains(first, then: second)
    }
}
