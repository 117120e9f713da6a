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
///
/// One of AuditPolicy's owners of raw memory (with ``CandidateList`` and ``TokenMarking``): the
/// tokens, and the marks of ``append(tokensOf:marking:authority:)``, are kept in memory it
/// allocates and frees itself, read and written only here, every index checked against how many
/// there are.
@safe struct TokenHashes: ~Copyable {
    /// A token's hash, and where it starts and ends (the first byte after it); a C struct, so that
    /// the index's C kernels read the tokens where they are.
    typealias Token = IndexToken

    /// At most this many tokens are kept on the stack (1 KiB, and 256 bytes of marks).
    private static let stackCapacity = 64

    private let storage: UnsafeMutableBufferPointer<Token>
    /// The marker's entries (see ``append(tokensOf:marking:authority:)``).
    private let marks: UnsafeMutableBufferPointer<Int32>
    /// How many tokens there are.
    private(set) var count = 0
    /// How many entries the marker wrote.
    private(set) var markedCount = 0
    /// Whether the tokens were marked as they were found.
    private(set) var isMarked = false
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

    @inline(__always)
    private init(storage: UnsafeMutableBufferPointer<Token>, marks: UnsafeMutableBufferPointer<Int32>) {
        unsafe self.storage = storage
        unsafe self.marks = marks
    }

    /// Calls `body` with room for every token of a subject of `length` bytes (a token and the
    /// separator after it take two bytes at least), and for a mark per token.
    @inline(__always)
    static func withTokens<Result>(ofSubjectLength length: Int, _ body: (inout TokenHashes) -> Result) -> Result {
        let capacity = length / 2 + 1
        if capacity <= stackCapacity {
            return unsafe withUnsafeTemporaryAllocation(of: Token.self, capacity: stackCapacity) { storage in
                unsafe withUnsafeTemporaryAllocation(of: Int32.self, capacity: stackCapacity) { marks in
                    var tokens = unsafe TokenHashes(storage: storage, marks: marks)
                    return body(&tokens)
                }
            }
        }
        // One block for both, the marks after the tokens (whose stride keeps them aligned): a
        // second allocation cost a long subject about 80 instructions.
        let tokenBytes = capacity * MemoryLayout<Token>.stride
        let block = UnsafeMutableRawPointer.allocate(
            byteCount: tokenBytes + capacity * MemoryLayout<Int32>.stride, alignment: MemoryLayout<Token>.alignment)
        defer { unsafe block.deallocate() }
        let storage = unsafe UnsafeMutableBufferPointer(
            start: block.bindMemory(to: Token.self, capacity: capacity), count: capacity)
        let marks = unsafe UnsafeMutableBufferPointer(
            start: (block + tokenBytes).bindMemory(to: Int32.self, capacity: capacity), count: capacity)
        var tokens = unsafe TokenHashes(storage: storage, marks: marks)
        return body(&tokens)
    }

    /// Token `index`, in subject order.
    @inline(__always)
    subscript(index: Int) -> Token {
        precondition(index >= 0 && index < count, "a token that was found")
        return unsafe storage[index]
    }

    /// The tokens in subject order, copied.
    var tokens: [Token] { (0..<count).map { self[$0] } }

    /// Adds a token of hash `hash` at `start..<end` (not empty).
    @inline(__always)
    mutating func append(_ hash: UInt64, start: Int, end: Int) {
        precondition(unsafe count < storage.count && start >= 0 && start < end, "room for a token that is not empty")
        unsafe storage[count] = Token(
            hash: hash, start: Int32(truncatingIfNeeded: start), end: Int32(truncatingIfNeeded: end))
        count &+= 1
        isMarked = false
        hasSummary = false
    }

    /// Appends every token of `bytes` (see ``TokenScanner``) with its hash (see
    /// ``IndexKey/tokenHash(_:_:_:)``). `isTokenizable` is false, the scan having stopped, when
    /// `bytes` cannot be tokenized (see ``TokenScanner/forEachToken(in:isASCII:_:)``); `isASCII` says
    /// whether every byte read is below 0x80.
    ///
    /// With `marking` (the first tokens kept here, of a subject of fewer than 2^25 bytes), the
    /// tokens are also marked as they are found: those for which its gate has a flag set, that its
    /// prefix or suffix gate says may start or end with a key (see
    /// ``AffixGate/mayMatch(_:_:_:backwards:)``), or that start in `authority` and for which its
    /// authority gate has a flag set, in order, each only when it reads it. ``marked(_:)`` reads
    /// the entries: a token's index times 64, plus the gate's flags, plus
    /// ``RuleIndex/FieldGroup/mayHavePrefix`` and ``RuleIndex/FieldGroup/mayHaveSuffix`` when they
    /// apply, plus the authority gate's flags times 16.
    ///
    /// The C kernel `index_hash_tokens` does the work: the same scan and hash as the Swift ones,
    /// without a bounds check on each load, and the marks with no branch per token. Marking in the
    /// same loop costs less than a second pass over the tokens.
    @inline(__always)
    mutating func append(
        tokensOf bytes: Span<UInt8>, marking: TokenMarking, authority: Range<Int>
    ) -> (isTokenizable: Bool, isASCII: Bool) {
        precondition(count == 0 && bytes.count < Self.markableSubject, "a subject whose token indices fit an entry")
        return unsafe marking.withGates(authority: authority) { gates in unsafe append(tokensOf: bytes, gates: gates) }
    }

    /// Appends every token of `bytes`, unmarked (see ``append(tokensOf:marking:authority:)``).
    mutating func append(tokensOf bytes: Span<UInt8>) -> (isTokenizable: Bool, isASCII: Bool) {
        unsafe append(tokensOf: bytes, gates: nil)
    }

    /// Calls the C kernel with `gates` (nil: no marks) and checks what it wrote.
    @inline(__always)
    private mutating func append(tokensOf bytes: Span<UInt8>, gates: UnsafePointer<IndexTokenGates>?) -> (
        isTokenizable: Bool, isASCII: Bool
    ) {
        // A subject of `n` bytes has at most `n / 2 + 1` tokens, the room made for it.
        precondition(unsafe bytes.count / 2 + 1 <= storage.count - count, "room for every token of the subject")
        let room = unsafe UnsafeMutableBufferPointer(rebasing: storage[count...])
        let marks = unsafe marks
        var flags: Int32 = 0
        var marked = 0
        let found = unsafe bytes.withUnsafeBufferPointer { bytes in
            unsafe index_hash_tokens(
                bytes.baseAddress, bytes.count, room.baseAddress, &flags, gates, marks.baseAddress, &marked)
        }
        precondition(found >= 0 && found <= bytes.count / 2 + 1, "the kernel wrote into the room it had")
        precondition(marked >= 0 && marked <= found, "the kernel marked tokens it found")
        count += found
        markedCount = marked
        isMarked = unsafe gates != nil
        hasSummary = false
        return (flags & INDEX_TOKENS_UNTOKENIZABLE == 0, flags & INDEX_TOKENS_NON_ASCII == 0)
    }

    /// The largest subject whose tokens ``append(tokensOf:marking:authority:)`` marks, plus one: a
    /// token's index, times 64, must fit an entry.
    static let markableSubject = 1 << 25

    /// Entry `position` of the marks ``append(tokensOf:marking:authority:)`` made.
    @inline(__always)
    func marked(_ position: Int) -> Int32 {
        precondition(position >= 0 && position < markedCount, "an entry the marker wrote")
        return unsafe marks[position]
    }

    /// Whether some token has hash `hash`: never false when one has; for a subject of more than
    /// ``exactTokenLimit`` tokens, now and then true when none has.
    @inline(__always)
    mutating func contains(_ hash: UInt64) -> Bool {
        if !hasSummary { summarize() }
        if count > Self.exactTokenLimit {
            let bloom = set.span
            let mask = bloom.count &* 64 &- 1
            let first = Int(truncatingIfNeeded: hash) & mask
            let second = Int(truncatingIfNeeded: hash &>> 32) & mask
            return bloom[first &>> 6] & (1 &<< UInt64(truncatingIfNeeded: first)) != 0
                && bloom[second &>> 6] & (1 &<< UInt64(truncatingIfNeeded: second)) != 0
        }
        guard summary[Int(truncatingIfNeeded: hash &>> 61)] & (1 &<< (hash &>> 55)) != 0 else { return false }
        if set.isEmpty {
            if count <= 16 || comparisons < 4 * count {
                comparisons += count
                for index in 0..<count where unsafe storage[index].hash == hash { return true }
                return false
            }
            buildSet()
        }
        let set = set.span
        let mask = set.count - 1
        var slot = Int(truncatingIfNeeded: hash) & mask
        while true {
            if set[slot] == hash { return true }
            if set[slot] == 0 { return false }
            slot = (slot + 1) & mask
        }
    }

    private mutating func summarize() {
        hasSummary = true
        if count > Self.exactTokenLimit {
            // Two bits per token, in about 16 bits per token.
            var bits = 1_024
            while bits < count * 16 { bits *= 2 }
            var bloom = [UInt64](repeating: 0, count: bits / 64)
            precondition(unsafe count <= storage.count, "tokens that were found")
            unsafe bloom.withUnsafeMutableBufferPointer { words in
                unsafe index_token_bloom(storage.baseAddress, count, words.baseAddress, bits)
            }
            set = bloom
            return
        }
        summary = InlineArray(repeating: 0)
        for index in 0..<count {
            let hash = unsafe storage[index].hash
            summary[Int(truncatingIfNeeded: hash &>> 61)] |= 1 &<< (hash &>> 55)
        }
    }

    private mutating func buildSet() {
        var capacity = 32
        while capacity < count * 2 { capacity *= 2 }
        set = [UInt64](repeating: 0, count: capacity)
        for index in 0..<count {
            let token = unsafe storage[index]
            var slot = Int(truncatingIfNeeded: token.hash) & (capacity - 1)
            while set[slot] != 0, set[slot] != token.hash { slot = (slot + 1) & (capacity - 1) }
            set[slot] = token.hash
        }
    }
}

/// What ``TokenHashes/append(tokensOf:marking:authority:)`` marks a subject's tokens by: the token
/// gate, the gates of the start and end keys, and the gate of the keys looked up in the
/// authority, each only when it reads it.
///
/// The gates' words are copied once, when the index is built, into one block this object owns,
/// with the C kernel's `IndexTokenGates` pointing into it: made for each subject instead, through
/// a closure for each gate's words, the struct cost about 70 instructions a decision.
///
/// One of AuditPolicy's owners of raw memory: the block is written in `init` only, read by the
/// kernel through ``withGates(authority:_:)`` while this object is alive, and freed in `deinit`.
@safe final class TokenMarking: @unchecked Sendable {
    // @unchecked: `words` and `gates` are written in `init` only, then only read.
    let gate: TokenGate
    let readsGate: Bool
    let prefixes: AffixGate
    let readsPrefixes: Bool
    let suffixes: AffixGate
    let readsSuffixes: Bool
    let authorityGate: TokenGate
    let readsAuthority: Bool
    /// The words of the gates read, one after the other.
    private let words: UnsafeMutableBufferPointer<UInt64>
    /// The kernel's view of the gates, pointing into `words`; its authority is empty.
    private let gates: IndexTokenGates

    init(
        gate: TokenGate, readsGate: Bool, prefixes: AffixGate, readsPrefixes: Bool, suffixes: AffixGate,
        readsSuffixes: Bool, authorityGate: TokenGate, readsAuthority: Bool
    ) {
        self.gate = gate
        self.readsGate = readsGate
        self.prefixes = prefixes
        self.readsPrefixes = readsPrefixes
        self.suffixes = suffixes
        self.readsSuffixes = readsSuffixes
        self.authorityGate = authorityGate
        self.readsAuthority = readsAuthority
        func copied(_ words: Span<UInt64>) -> [UInt64] { (0..<words.count).map { words[$0] } }
        let (gateWords, gateMask) = gate.withWords { (copied($0), $1) }
        let (authorityWords, authorityMask) = authorityGate.withWords { (copied($0), $1) }
        let (prefixQuads, prefixShift) = prefixes.withWords { (copied($0), $1) }
        let (suffixQuads, suffixShift) = suffixes.withWords { (copied($0), $1) }
        precondition(
            gateWords.count * 32 == Int(gateMask) + 1 && authorityWords.count * 32 == Int(authorityMask) + 1,
            "a gate holds 32 slots a word")
        precondition(
            prefixQuads.count << prefixShift == 1 << 26 && suffixQuads.count << suffixShift == 1 << 26,
            "a Bloom filter of 2^(32 - shift) bits")
        let parts = [
            readsGate ? gateWords : [], readsAuthority ? authorityWords : [], readsPrefixes ? prefixQuads : [],
            readsSuffixes ? suffixQuads : [],
        ]
        let words = UnsafeMutableBufferPointer<UInt64>.allocate(capacity: max(1, parts.reduce(0) { $0 + $1.count }))
        var starts: [Int] = []
        var next = 0
        for part in parts {
            starts.append(next)
            for word in part {
                unsafe words[next] = word
                next += 1
            }
        }
        unsafe self.words = words
        let base = words.baseAddress
        // A gate not read gets no pointer: the kernel reads only the gates it has one for.
        func start(_ part: Int) -> UnsafePointer<UInt64>? {
            guard !parts[part].isEmpty, let base = unsafe base else { return nil }
            return unsafe UnsafePointer(base + starts[part])
        }
        unsafe self.gates = IndexTokenGates(
            gate: start(0), gate_mask: gateMask,
            prefixes: IndexAffixGate(quads: start(2), quad_shift: prefixShift),
            suffixes: IndexAffixGate(quads: start(3), quad_shift: suffixShift),
            authority_gate: start(1), authority_gate_mask: authorityMask, authority_start: 0, authority_end: 0)
    }

    deinit {
        unsafe words.deallocate()
    }

    /// Calls `body` with the kernel's gates, the authority set to `authority`.
    @inline(__always)
    func withGates<Result>(authority: Range<Int>, _ body: (UnsafePointer<IndexTokenGates>) -> Result) -> Result {
        var gates = unsafe gates
        unsafe gates.authority_start = authority.lowerBound
        unsafe gates.authority_end = authority.upperBound
        return withExtendedLifetime(self) { unsafe withUnsafePointer(to: &gates) { unsafe body($0) } }
    }
}
