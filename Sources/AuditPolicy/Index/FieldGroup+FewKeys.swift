import AuditLocking
import AuditRegex
import Dispatch

extension RuleIndex.FieldGroup {
    /// A few infix keys, looked for in the subject as text.
    final class FewKeys: Sendable {
        static let maximumCount = 16
        /// Each key's bytes, first byte lowest (a key has at most eight).
        let texts: [UInt64]
        let lengths: [Int]
        let hashes: [UInt64]
        /// For each byte, the keys that start with it (bit `n`: key `n`).
        let byFirstByte: [UInt16]
        /// For each distinct first two bytes of the keys (a one-byte key has no second byte), the
        /// keys that start with them.
        let keysByPair: [UInt16]
        /// One bit per key.
        let everyKey: UInt16

        /// Nil for no keys, more than ``maximumCount``, or a key longer than eight bytes.
        init?(_ keys: Set<[UInt8]>) {
            guard !keys.isEmpty, keys.count <= Self.maximumCount, keys.allSatisfy({ (1...8).contains($0.count) })
            else { return nil }
            let sorted = keys.sorted { $0.lexicographicallyPrecedes($1) }
            texts = sorted.map { $0.reversed().reduce(0) { $0 << 8 | UInt64($1) } }
            lengths = sorted.map(\.count)
            hashes = sorted.map { IndexKey(kind: .infix, text: $0).hashValue64 }
            var byFirstByte = [UInt16](repeating: 0, count: 256)
            var byPair: [[UInt8]: UInt16] = [:]
            for (number, key) in sorted.enumerated() {
                byFirstByte[Int(key[0])] |= 1 << UInt16(number)
                byPair[Array(key.prefix(2)), default: 0] |= 1 << UInt16(number)
            }
            let pairs = byPair.sorted { $0.key.lexicographicallyPrecedes($1.key) }
            keysByPair = pairs.map(\.value)
            self.byFirstByte = byFirstByte
            everyKey = UInt16.max >> UInt16(16 - sorted.count)
            pairFirsts = pairs.map { $0.key[0] }
            pairSeconds = pairs.map { $0.key.count > 1 ? $0.key[1] : 0 }
            pairsWithoutSecond = pairs.indices.reduce(0) { $0 | (pairs[$1].key.count > 1 ? 0 : 1 << UInt32($1)) }
        }

        /// The first and second bytes of each pair of ``keysByPair``, for the search
        /// (`index_next_pair_start`).
        let pairFirsts: [UInt8]
        let pairSeconds: [UInt8]
        /// Bit `n`: pair `n` is a one-byte key's, with no second byte.
        let pairsWithoutSecond: UInt32

        /// The first position from `index` on, and before the last byte, where a pair of
        /// `active` (bit `n`: pair `n`) stands, its bytes' bit 5 set; nil when there is none. Bit
        /// 5 set lower-cases a capital letter and leaves lower-case letters and digits alone, so
        /// no position of a key in any case is missed; the bytes of a position found need
        /// comparing, as a few others pass (0x10 for `0`).
        @inline(__always)
        func nextPairStart(in bytes: Span<UInt8>, from index: Int, active: UInt32) -> Int? {
            let (firsts, seconds) = (pairFirsts, pairSeconds)
            return bytes.nextPairStart(
                from: index, firsts: firsts.span, seconds: seconds.span, active: active,
                withoutSecond: pairsWithoutSecond)
        }

        /// Bit `n`: pair `n` starts a key not in `found`.
        @inline(__always)
        func activePairs(found: UInt16) -> UInt32 {
            var active: UInt32 = 0
            for (pair, keys) in keysByPair.enumerated() where keys & ~found != 0 { active |= 1 << UInt32(pair) }
            return active
        }
    }
}
