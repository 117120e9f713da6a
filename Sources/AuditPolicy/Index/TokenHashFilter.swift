/// A one-hash Bloom filter of token hashes in 4 KiB: no false "no", a few false "maybe".
struct TokenHashFilter: Sendable {
    private var words = [UInt64](repeating: 0, count: 512)

    mutating func insert(_ hash: UInt64) {
        let bit = Int(truncatingIfNeeded: hash >> 20) & 32_767
        words[bit >> 6] |= 1 << UInt64(bit & 63)
    }

    @inline(__always)
    func contains(_ hash: UInt64) -> Bool {
        let bit = Int(truncatingIfNeeded: hash >> 20) & 32_767
        return words[bit &>> 6] & (1 &<< UInt64(truncatingIfNeeded: bit)) != 0
    }
}
