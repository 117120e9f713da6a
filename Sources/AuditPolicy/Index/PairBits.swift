/// A set of pairs of 7-bit bytes as 128 × 128 bits, bit `128 × first + second` for the pair
/// (`first`, `second`): the table the C kernel `literal_pair_starts` reads (see
/// `Span.pairStarts(from:in:)`).
///
/// The kernel compares bytes as they are, so a search without case adds each pair in every case
/// of its letters: four bits for two letters, where lower-casing each byte of the subject cost
/// the kernel five instructions a byte.
struct PairBits: Sendable {
    /// The set's 256 words.
    private(set) var words = [UInt64](repeating: 0, count: 128 * 128 / 64)

    /// Adds (`first`, `second`) in every case of their letters; with `second` nil, `first`
    /// followed by any byte.
    mutating func insertInEitherCase(_ first: UInt8, then second: UInt8?) {
        let seconds = second.map(Self.cases) ?? Array(0..<128)
        for first in Self.cases(first) {
            for second in seconds {
                let pair = Int(first & 0x7F) << 7 | Int(second & 0x7F)
                words[pair >> 6] |= 1 << UInt64(pair & 63)
            }
        }
    }

    /// `byte`, and its other case when it is a letter.
    private static func cases(_ byte: UInt8) -> [UInt8] {
        (byte | 0x20) &- UInt8(ascii: "a") < 26 ? [byte | 0x20, byte & ~0x20] : [byte]
    }
}
