/// Finds the tokens of a subject (see ``IndexKey``) sixteen bytes at a time.
///
/// Each block of 64 bytes becomes a 64-bit mask of its letters and digits, computed with vector
/// comparisons (SSE2, in the C kernel `byte_classes`) rather than a test and a branch per byte;
/// tokens are then read off the mask's edges, so the work per byte is under one instruction and
/// the branches are per token.
enum TokenScanner {
    /// Calls `body` with the bounds of each token of `bytes`, in order; returns false, having
    /// stopped, once the subject is found to hold U+212A (Kelvin sign, E2 84 AA) or U+017F (long
    /// s, C5 BF). PCRE2 matches those caselessly against `k` and `s`, which tokens cannot express,
    /// so the caller must then run every rule. Clears `isASCII` once a byte of 0x80 or more is read.
    ///
    /// One loop over each block's token starts and ends, paired in order (they alternate), with no
    /// test per byte and no state kept between tokens but the block's two masks: inlined, with
    /// `body` storing each token, it compiles to straight code with a few registers per token.
    @inline(__always)
    static func forEachToken(
        in bytes: Span<UInt8>, isASCII: inout Bool, _ body: (_ start: Int, _ end: Int) -> Void
    ) -> Bool {
        // The start of a token that began in an earlier block and runs on, or -1.
        var carriedStart = -1
        var blockStart = 0
        while blockStart < bytes.count {
            let blockLength = min(64, bytes.count &- blockStart)
            guard let mask = alnumMask(bytes, from: blockStart, length: blockLength, isASCII: &isASCII) else {
                return false
            }
            // Where a token starts, and where one ends (the first byte after it); bits past a short
            // block's end are clear in `mask`, so a token running to the end of the block ends there.
            let before = mask << 1 | (carriedStart >= 0 ? 1 : 0)
            var starts = mask & ~before
            var ends = ~mask & before
            if carriedStart >= 0, ends != 0 {
                body(carriedStart, blockStart &+ ends.trailingZeroBitCount)
                ends &= ends &- 1
                carriedStart = -1
            }
            while ends != 0 {
                body(blockStart &+ starts.trailingZeroBitCount, blockStart &+ ends.trailingZeroBitCount)
                starts &= starts &- 1
                ends &= ends &- 1
            }
            // A start left without an end runs into the next block.
            if starts != 0 { carriedStart = blockStart &+ starts.trailingZeroBitCount }
            blockStart &+= blockLength
        }
        if carriedStart >= 0 { body(carriedStart, bytes.count) }
        return true
    }

    /// Bit `n` set: byte `from + n` is an ASCII letter or digit (`length` from 1 to 64, and the
    /// block ends the subject when shorter; higher bits clear). Nil when a Kelvin sign or long s
    /// starts in the block. Clears `isASCII` at a byte of 0x80 or more.
    @inline(__always)
    fileprivate static func alnumMask(
        _ bytes: Span<UInt8>, from start: Int, length: Int, isASCII: inout Bool
    ) -> UInt64? {
        let masks = bytes.byteClasses(from: start, length: length)
        if masks.nonASCII != 0 {
            isASCII = false
            if hasASCIIFoldingCharacter(bytes, from: start, to: start &+ length) { return nil }
        }
        return masks.alnum
    }

    /// Whether U+212A (E2 84 AA) or U+017F (C5 BF) starts at an index in `start..<end`.
    private static func hasASCIIFoldingCharacter(_ bytes: Span<UInt8>, from start: Int, to end: Int)
        -> Bool
    {
        for index in start..<end {
            if bytes[index] == 0xC5, index + 1 < bytes.count, bytes[index + 1] == 0xBF { return true }
            if bytes[index] == 0xE2, index + 2 < bytes.count, bytes[index + 1] == 0x84, bytes[index + 2] == 0xAA {
                return true
            }
        }
        return false
    }
}
