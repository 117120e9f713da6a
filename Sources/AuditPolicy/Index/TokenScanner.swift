internal import CByteClasses

/// Finds the tokens of a subject (see ``IndexKey``) sixteen bytes at a time.
///
/// Each block of 64 bytes becomes a 64-bit mask of its letters and digits, computed with vector
/// comparisons (SSE2, in the C kernel `byte_classes`) rather than a test and a branch per byte;
/// tokens are then read off the mask's edges, so the work per byte is under one instruction and
/// the branches are per token.
enum TokenScanner {
    /// The tokens of a subject one at a time: a loop over `next()` compiles to straight code with
    /// no call per token.
    struct Cursor {
        private let bytes: UnsafeBufferPointer<UInt8>
        /// Where the current block of 64 bytes starts, and where the next one does.
        private var blockStart = 0
        private var nextBlock = 0
        /// The current block's token starts and ends (the first byte after a token) not yet read.
        /// Starts and ends alternate, so pairing them in order needs no test per byte.
        private var starts: UInt64 = 0
        private var ends: UInt64 = 0
        /// The start of a token that began in an earlier block, or -1.
        private var carriedStart = -1
        /// False once the subject was found to hold U+212A (Kelvin sign, E2 84 AA) or U+017F (long
        /// s, C5 BF); the cursor then returns no more tokens. PCRE2 matches those caselessly
        /// against `k` and `s`, which tokens cannot express, so the caller must run every rule.
        private(set) var isTokenizable = true
        /// False once a byte of 0x80 or more was read.
        private(set) var isASCII = true

        init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

        /// The next token's bounds, or nil after the last.
        @inline(__always)
        mutating func next() -> (start: Int, end: Int)? {
            while true {
                if ends != 0 {
                    let start: Int
                    if carriedStart >= 0 {
                        start = carriedStart
                        carriedStart = -1
                    } else {
                        start = blockStart &+ starts.trailingZeroBitCount
                        starts &= starts &- 1
                    }
                    let end = blockStart &+ ends.trailingZeroBitCount
                    ends &= ends &- 1
                    return (start, end)
                }
                // A start left without an end runs into the next block.
                if starts != 0 {
                    carriedStart = blockStart &+ starts.trailingZeroBitCount
                    starts = 0
                }
                guard nextBlock < bytes.count else {
                    guard carriedStart >= 0 else { return nil }
                    defer { carriedStart = -1 }
                    return (carriedStart, bytes.count)
                }
                blockStart = nextBlock
                let blockLength = min(64, bytes.count &- blockStart)
                nextBlock &+= blockLength
                guard let mask = alnumMask(bytes, from: blockStart, length: blockLength, isASCII: &isASCII) else {
                    isTokenizable = false
                    carriedStart = -1
                    nextBlock = bytes.count
                    return nil
                }
                // Where a token starts, and where one ends; bits past a short block's end are clear
                // in `mask`, so a token running to the end of the block ends there.
                let before = mask << 1 | (carriedStart >= 0 ? 1 : 0)
                starts = mask & ~before
                ends = ~mask & before
            }
        }
    }

    /// Bit `n` set: byte `from + n` is an ASCII letter or digit (`length` from 1 to 64, and the
    /// block ends the subject when shorter; higher bits clear). Nil when a Kelvin sign or long s
    /// starts in the block. Clears `isASCII` at a byte of 0x80 or more.
    @inline(__always)
    fileprivate static func alnumMask(
        _ bytes: UnsafeBufferPointer<UInt8>, from start: Int, length: Int, isASCII: inout Bool
    ) -> UInt64? {
        guard let base = bytes.baseAddress else { return 0 }
        let masks = byte_classes(base, bytes.count, start, length)
        if masks.nonASCII != 0 {
            isASCII = false
            if hasASCIIFoldingCharacter(bytes, from: start, to: start &+ length) { return nil }
        }
        return masks.alnum
    }

    /// Whether U+212A (E2 84 AA) or U+017F (C5 BF) starts at an index in `start..<end`.
    private static func hasASCIIFoldingCharacter(_ bytes: UnsafeBufferPointer<UInt8>, from start: Int, to end: Int)
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
