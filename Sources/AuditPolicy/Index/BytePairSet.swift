import AuditLocking
import AuditRegex
internal import CByteClasses
import Dispatch

/// A set of byte pairs (a byte, then the byte after it or 0 for none), each with the lengths (1 to
/// 8) of the keys that begin with it: 65,536 bits in 8 KiB, small enough to stay in the processor's
/// first-level cache, answer most questions; the lengths take a byte per pair (64 KiB), read only
/// for pairs in the set.
struct BytePairSet: Sendable {
    private var words = [UInt64](repeating: 0, count: 1_024)
    private var lengthMasks: [UInt8] = []

    /// Adds (`first`, `second`) for a key of `length` bytes; with `second` nil, `first` followed by
    /// anything or nothing.
    mutating func insert(_ first: UInt8, then second: UInt8?, length: Int) {
        guard let second else {
            for next in 0...255 { insert(first, then: UInt8(next), length: length) }
            return
        }
        let pair = Int(first) << 8 | Int(second)
        words[pair >> 6] |= 1 << UInt64(pair & 63)
        if lengthMasks.isEmpty { lengthMasks = [UInt8](repeating: 0, count: 65_536) }
        lengthMasks[pair] |= 1 << UInt8(min(length, 8) - 1)
    }

    /// Whether any pair was added.
    var hasPairs: Bool { !lengthMasks.isEmpty }

    /// Calls `body` with the set's 1,024 words (pair `p`: bit `p % 64` of word `p / 64`), for the C
    /// kernel `index_hash_tokens`, which marks tokens by it.
    func withWords<Result>(_ body: (Span<UInt64>) -> Result) -> Result {
        body(words.span)
    }

    /// Whether (`first`, `second`) was added.
    @inline(__always)
    func contains(_ first: UInt8, then second: UInt8) -> Bool {
        contains(pair: Int(first) << 8 | Int(second))
    }

    /// Whether the pair `pair` (its first byte high, the second low) was added.
    @inline(__always)
    private func contains(pair: Int) -> Bool {
        words[pair &>> 6 & 1_023] & (1 &<< UInt64(truncatingIfNeeded: pair)) != 0
    }

    /// The lengths of the keys added with (`first`, `second`): bit `n - 1` for length `n`.
    @inline(__always)
    func lengths(_ first: UInt8, then second: UInt8) -> UInt8 {
        guard contains(first, then: second) else { return 0 }
        return lengthMasks[Int(first) &<< 8 | Int(second)]
    }
}
