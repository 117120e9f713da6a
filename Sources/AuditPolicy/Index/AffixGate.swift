/// Whether a token may start with one of a set of keys (or, read backwards, end with one), judged
/// by the token's first four bytes lower-cased (its first one to three, zero-padded, when it is
/// shorter) in a one-hash Bloom filter of 64 bits per entry up to 16 KiB, about 16 beyond (512 bits
/// at least).
///
/// A key of four bytes or more is entered by its first four. A shorter key is entered with every
/// way a token can go on after it for four bytes: each letter or digit, or the token's end (zero
/// from there on); 37 entries for a key of three bytes, 1,333 for two, 47,989 for one. So one
/// lookup answers for every key, whatever its length, with no second table for short keys.
struct AffixGate: Sendable {
    /// Collects the keys of a gate.
    struct Builder {
        private var quads: [UInt32] = []

        /// Adds a key (letters and digits, lower-cased), in the order the gate reads tokens (a
        /// suffix key last byte first).
        mutating func insert<Key: Collection<UInt8>>(_ key: Key) {
            let bytes = Array(key.prefix(4))
            precondition(!bytes.isEmpty, "a key of one byte at least")
            var ways: [UInt32] = [Self.quad(bytes)]
            for position in bytes.count..<4 {
                // Tokens that go on past `position`: each of those that reached it, with each
                // letter or digit there (those that ended before it stay as they are).
                let reaching = ways.filter { $0 >> UInt32(8 * (position - 1)) != 0 }
                for way in reaching {
                    for byte in Self.tokenBytes { ways.append(way | UInt32(byte) << UInt32(8 * position)) }
                }
            }
            quads += ways
        }

        /// Bytes `bytes` (at most four) as a quad, the first lowest.
        private static func quad(_ bytes: [UInt8]) -> UInt32 {
            bytes.reversed().reduce(0) { $0 << 8 | UInt32($1) }
        }

        /// The bytes of a token lower-cased: the digits and the lower-case letters.
        private static let tokenBytes = Array("0123456789abcdefghijklmnopqrstuvwxyz".utf8)

        var gate: AffixGate { AffixGate(quads: quads) }
    }

    private let words: [UInt64]
    private let shift: UInt32

    private init(quads: [UInt32]) {
        // About 64 bits per entry while that fits 16 KiB, which stays in the first-level cache:
        // a token that passes by chance costs a lookup of each of its start (end) lengths, and at
        // 16 bits per entry one token in sixteen does. Beyond, about 16 bits, up to 128 KiB.
        var bitCount = 9
        while 1 << bitCount < quads.count * 64, bitCount < 17 { bitCount += 1 }
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

    /// Calls `body` with the Bloom filter's words and its shift, for the C kernel
    /// `index_hash_tokens`, which marks tokens by the gate.
    func withWords<Result>(_ body: (Span<UInt64>, UInt32) -> Result) -> Result {
        body(words.span, shift)
    }

    /// Whether the token `bytes[start..<end]` may start with a key (`backwards`: end with one);
    /// never false when it does.
    @inline(__always)
    func mayMatch(_ bytes: Span<UInt8>, _ start: Int, _ end: Int, backwards: Bool) -> Bool {
        let length = end &- start
        var quad: UInt32
        if length >= 4 {
            // Read backwards, the last byte comes first, as in the key.
            quad = bytes.word32(at: backwards ? end &- 4 : start)
            if backwards { quad = quad.byteSwapped }
        } else {
            quad = 0
            for offset in 0..<length {
                let byte = bytes[backwards ? end &- 1 &- offset : start &+ offset]
                quad |= UInt32(byte) &<< UInt32(8 &* offset)
            }
        }
        // Every byte of a token is a letter or digit: setting bit 5 lower-cases it.
        let lowered = quad | (0x2020_2020 &>> UInt32(8 &* (4 &- min(length, 4))))
        let bit = Self.bit(lowered, shift: shift)
        return words[bit &>> 6] & (1 &<< UInt64(truncatingIfNeeded: bit)) != 0
    }
}
