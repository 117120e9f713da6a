/// The tokens of one subject: their hashes and where they are, a 512-bit summary (made at the first
/// question, as most subjects are never asked one) that answers most "does the subject have this
/// token?" questions without a search, and, for subjects with many
/// tokens, a small hash set that answers the rest in one or two probes (a busy key's postings ask
/// it hundreds of times).
///
/// Lives only inside ``withTokens(ofSubjectLength:_:)``: the tokens of a short subject are kept on
/// the stack, so most evaluations allocate nothing for them.
struct TokenHashes: ~Copyable {
    struct Token {
        let hash: UInt64
        let start: Int32
        let end: Int32
    }

    /// At most this many tokens are kept on the stack (1 KiB).
    private static let stackCapacity = 64

    private let storage: UnsafeMutableBufferPointer<Token>
    private var count = 0
    /// One bit per token (bits 55 and up of its hash pick it): a clear bit means no such token.
    private var summary = InlineArray<8, UInt64>(repeating: 0)
    private var hasSummary = false
    /// Open addressing over the token hashes (never 0, so 0 marks an empty slot); built once
    /// searching the tokens one by one has cost as much as building it would.
    private var set: [UInt64] = []
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
    /// ``TokenScanner/Cursor/isTokenizable``); `isASCII` says whether every byte read is below 0x80.
    mutating func append(tokensOf bytes: UnsafeBufferPointer<UInt8>) -> (isTokenizable: Bool, isASCII: Bool) {
        var cursor = TokenScanner.Cursor(bytes)
        // The count in a local, so that it stays in a register rather than being stored each time.
        var count = self.count
        while let token = cursor.next() {
            storage[count] = Token(
                hash: IndexKey.tokenHash(bytes, token.start, token.end), start: Int32(truncatingIfNeeded: token.start),
                end: Int32(truncatingIfNeeded: token.end))
            count &+= 1
        }
        self.count = count
        hasSummary = false
        return (cursor.isTokenizable, cursor.isASCII)
    }

    /// Whether some token has hash `hash`.
    @inline(__always)
    mutating func contains(_ hash: UInt64) -> Bool {
        if !hasSummary { summarize() }
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
        summary = InlineArray(repeating: 0)
        for token in tokens { summary[Int(truncatingIfNeeded: token.hash &>> 61)] |= 1 &<< (token.hash &>> 55) }
        hasSummary = true
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
