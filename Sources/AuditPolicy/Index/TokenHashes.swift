internal import CByteClasses

/// The tokens of one subject: their hashes and where they are, and what answers "does the
/// subject have this token?" (asked for the confirmation tokens of rules found by a key).
///
/// Made at the first question, as most subjects are never asked one. For a subject of up to 64
/// tokens the answer is exact: a 512-bit summary answers most questions without a search, and
/// a small hash set the rest once searching has cost as much as building it (a busy key's
/// postings ask hundreds of times). A longer subject gets a Bloom filter of about 16 bits per
/// token instead, and its "yes" is not checked: a wrong "yes" (about one in seventy) only lets a
/// rule run that PCRE2 then rejects, and building the exact set would cost a long URL more.
///
/// Lives only inside ``withTokens(ofSubjectLength:_:)``: the tokens of a short subject are kept on
/// the stack, so most evaluations allocate nothing for them.
struct TokenHashes: ~Copyable {
    /// A token's hash, and where it starts and ends (the first byte after it); a C struct, so that
    /// the index's C kernels read the tokens where they are.
    typealias Token = IndexToken

    /// At most this many tokens are kept on the stack (1 KiB).
    private static let stackCapacity = 64

    private let storage: UnsafeMutableBufferPointer<Token>
    private var count = 0
    /// One bit per token (bits 55 and up of its hash pick it): a clear bit means no such token.
    private var summary = InlineArray<8, UInt64>(repeating: 0)
    private var hasSummary = false
    /// Open addressing over the token hashes (never 0, so 0 marks an empty slot); built once
    /// searching the tokens one by one has cost as much as building it would. For a subject of
    /// more than ``exactTokenLimit`` tokens, the Bloom filter's words instead.
    private var set: [UInt64] = []
    /// The most tokens a subject may have for "does it have this token?" to be answered exactly.
    static let exactTokenLimit = 64
    /// Tokens compared in searches so far, while there is no set.
    private var comparisons = 0

    private init(storage: UnsafeMutableBufferPointer<Token>) { self.storage = storage }

    /// Calls `body` with room for every token of a subject of `length` bytes (a token and the
    /// separator after it take two bytes at least).
    static func withTokens<Result>(ofSubjectLength length: Int, _ body: (inout TokenHashes) -> Result) -> Result {
        let capacity = length / 2 + 1
        if capacity <= stackCapacity {
            return withUnsafeTemporaryAllocation(of: Token.self, capacity: stackCapacity) { storage in
                var tokens = TokenHashes(storage: storage)
                return body(&tokens)
            }
        }
        let storage = UnsafeMutableBufferPointer<Token>.allocate(capacity: capacity)
        defer { storage.deallocate() }
        var tokens = TokenHashes(storage: storage)
        return body(&tokens)
    }

    /// The tokens in subject order.
    var tokens: UnsafeBufferPointer<Token> { UnsafeBufferPointer(rebasing: storage[..<count]) }

    @inline(__always)
    mutating func append(_ hash: UInt64, start: Int, end: Int) {
        storage[count] = Token(hash: hash, start: Int32(truncatingIfNeeded: start), end: Int32(truncatingIfNeeded: end))
        count &+= 1
        hasSummary = false
    }

    /// Appends every token of `bytes` (see ``TokenScanner``) with its hash. `isTokenizable` is false,
    /// the scan having stopped, when `bytes` cannot be tokenized (see
    /// ``TokenScanner/forEachToken(in:isASCII:_:)``); `isASCII` says whether every byte read is below 0x80.
    mutating func append(tokensOf bytes: UnsafeBufferPointer<UInt8>) -> (isTokenizable: Bool, isASCII: Bool) {
        // The storage and the count in locals, so that they stay in registers rather than being
        // loaded and stored for each token.
        let storage = storage
        var count = self.count
        var isASCII = true
        let isTokenizable = TokenScanner.forEachToken(in: bytes, isASCII: &isASCII) { start, end in
            storage[count] = Token(
                hash: IndexKey.tokenHash(bytes, start, end), start: Int32(truncatingIfNeeded: start),
                end: Int32(truncatingIfNeeded: end))
            count &+= 1
        }
        self.count = count
        hasSummary = false
        return (isTokenizable, isASCII)
    }

    /// Whether some token has hash `hash`: never false when one has; for a subject of more than
    /// ``exactTokenLimit`` tokens, now and then true when none has.
    @inline(__always)
    mutating func contains(_ hash: UInt64) -> Bool {
        if !hasSummary { summarize() }
        if count > Self.exactTokenLimit {
            return set.withUnsafeBufferPointer { bloom in
                let mask = bloom.count &* 64 &- 1
                let first = Int(truncatingIfNeeded: hash) & mask
                let second = Int(truncatingIfNeeded: hash &>> 32) & mask
                return bloom[first &>> 6] & (1 &<< UInt64(truncatingIfNeeded: first)) != 0
                    && bloom[second &>> 6] & (1 &<< UInt64(truncatingIfNeeded: second)) != 0
            }
        }
        guard summary[Int(truncatingIfNeeded: hash &>> 61)] & (1 &<< (hash &>> 55)) != 0 else { return false }
        if set.isEmpty {
            if count <= 16 || comparisons < 4 * count {
                comparisons += count
                return tokens.contains { $0.hash == hash }
            }
            buildSet()
        }
        return set.withUnsafeBufferPointer { set in
            let mask = set.count - 1
            var slot = Int(truncatingIfNeeded: hash) & mask
            while true {
                if set[slot] == hash { return true }
                if set[slot] == 0 { return false }
                slot = (slot + 1) & mask
            }
        }
    }

    private mutating func summarize() {
        hasSummary = true
        if count > Self.exactTokenLimit {
            // Two bits per token, in about 16 bits per token.
            var bits = 1_024
            while bits < count * 16 { bits *= 2 }
            var bloom = [UInt64](repeating: 0, count: bits / 64)
            for token in tokens {
                let first = Int(truncatingIfNeeded: token.hash) & (bits - 1)
                let second = Int(truncatingIfNeeded: token.hash >> 32) & (bits - 1)
                bloom[first >> 6] |= 1 << UInt64(first & 63)
                bloom[second >> 6] |= 1 << UInt64(second & 63)
            }
            set = bloom
            return
        }
        summary = InlineArray(repeating: 0)
        for token in tokens { summary[Int(truncatingIfNeeded: token.hash &>> 61)] |= 1 &<< (token.hash &>> 55) }
    }

    private mutating func buildSet() {
        var capacity = 32
        while capacity < count * 2 { capacity *= 2 }
        set = [UInt64](repeating: 0, count: capacity)
        for token in tokens {
            var slot = Int(truncatingIfNeeded: token.hash) & (capacity - 1)
            while set[slot] != 0, set[slot] != token.hash { slot = (slot + 1) & (capacity - 1) }
            set[slot] = token.hash
        }
    }
}
