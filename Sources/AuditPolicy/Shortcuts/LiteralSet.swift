/// Literal strings searched for in a subject of printable ASCII all at once, without case: which
/// of them occur.
///
/// Each literal (two bytes or more, letters lower-case) is filed under its first two bytes. A C
/// kernel finds the positions where such a pair stands, in either case, 64 at a time and without
/// a branch per position; at each, the literals filed under the pair are compared eight bytes at
/// a time against the subject's bytes there, lower-cased.
struct LiteralSet: Sendable {
    /// One literal of a pair's group.
    private struct Entry {
        /// The literal's first eight bytes, the first lowest; zero past its end.
        let head: UInt64
        /// Ones over the bytes of ``head`` that are the literal's.
        let headMask: UInt64
        let number: Int32
        let length: Int32
        /// Where the literal's bytes past its eighth start in ``LiteralSet/tails``.
        let tail: Int32
    }

    /// Number of literals.
    let count: Int
    /// The pairs the literals start with, in either case.
    private let pairs: PairBits
    /// For the pair of printable bytes `first`, `second`: the number of its group of literals, at
    /// `(first - 0x20) × 95 + second - 0x20`.
    private let pairGroups: [UInt16]
    /// The literals of group `g` are `entries[groupStarts[g]..<groupStarts[g + 1]]`.
    private let groupStarts: [Int32]
    private let entries: [Entry]
    /// The bytes of each literal longer than eight bytes past its eighth, one after another.
    private let tails: [UInt8]

    private static let printableCount = 95

    /// The set of `literals`, each two bytes or more, letters lower-case; bit `n` of a search's
    /// result stands for `literals[n]`. A literal with a byte outside printable ASCII is never
    /// found.
    init(_ literals: [[UInt8]]) {
        count = literals.count
        var byPair: [Int: [Int32]] = [:]
        for (number, literal) in literals.enumerated() {
            precondition(literal.count >= 2, "a literal of the set has two bytes or more")
            guard literal.allSatisfy({ $0 &- 0x20 < 0x5F }) else { continue }
            byPair[Self.pairIndex(literal[0], literal[1]), default: []].append(Int32(number))
        }
        precondition(byPair.count < Int(UInt16.max), "fewer groups than a UInt16 numbers")
        var pairs = PairBits()
        var groups = [UInt16](repeating: 0, count: Self.printableCount * Self.printableCount)
        var groupStarts: [Int32] = [0]
        var entries: [Entry] = []
        var tails: [UInt8] = []
        for pair in byPair.keys.sorted() {
            groups[pair] = UInt16(groupStarts.count - 1)
            for number in byPair[pair] ?? [] {
                let literal = literals[Int(number)]
                if entries.count == groupStarts[groupStarts.count - 1] {
                    pairs.insertInEitherCase(literal[0], then: literal[1])
                }
                var head: UInt64 = 0
                for (offset, byte) in literal.prefix(8).enumerated() { head |= UInt64(byte) << UInt64(8 * offset) }
                entries.append(
                    Entry(
                        head: head, headMask: literal.count >= 8 ? ~0 : (1 << UInt64(8 * literal.count)) - 1,
                        number: number, length: Int32(literal.count), tail: Int32(tails.count)))
                tails += literal.dropFirst(8)
            }
            groupStarts.append(Int32(entries.count))
        }
        self.pairs = pairs
        pairGroups = groups
        self.groupStarts = groupStarts
        self.entries = entries
        self.tails = tails
    }

    @inline(__always)
    private static func pairIndex(_ first: UInt8, _ second: UInt8) -> Int {
        Int(first &- 0x20) &* printableCount &+ Int(second &- 0x20)
    }

    /// Adds to `found` each literal that occurs in `subject`, compared without case. Every byte of
    /// `subject` is printable ASCII (0x20–0x7E).
    func search(_ subject: Span<UInt8>, found: inout FoundLiterals) {
        guard subject.count >= 2, count > 0 else { return }
        let (pairs, groups, groupStarts, entries) = (
            self.pairs.words.span, pairGroups.span, groupStarts.span, entries.span
        )
        var block = 0
        while block < subject.count &- 1 {
            var starts = subject.pairStarts(from: block, in: pairs)
            while starts != 0 {
                let start = block &+ starts.trailingZeroBitCount
                starts &= starts &- 1
                // The literals filed under the pair at `start`, against the eight bytes there.
                let group = Int(
                    groups[
                        Self.pairIndex(
                            ConditionAnalysis.lowercased(subject[start]),
                            ConditionAnalysis.lowercased(subject[start &+ 1]))])
                let word = Self.lowercased(
                    start &+ 8 <= subject.count ? subject.word64(at: start) : Self.lastWord(subject, start))
                for slot in Int(groupStarts[group])..<Int(groupStarts[group &+ 1]) {
                    let entry = entries[slot]
                    guard word & entry.headMask == entry.head, !found.contains(Int(entry.number)) else { continue }
                    guard entry.length <= 8 || tailOccurs(entry, at: start, in: subject) else { continue }
                    found.insert(Int(entry.number))
                }
            }
            block &+= 64
        }
    }

    /// Whether the bytes of `entry`'s literal past its eighth occur in `subject` from `start + 8`.
    private func tailOccurs(_ entry: Entry, at start: Int, in subject: Span<UInt8>) -> Bool {
        let length = Int(entry.length)
        guard start &+ length <= subject.count else { return false }
        let tail = Int(entry.tail) &- 8
        for offset in 8..<length where ConditionAnalysis.lowercased(subject[start &+ offset]) != tails[tail &+ offset] {
            return false
        }
        return true
    }

    /// The bytes of `subject` from `start` to its end (fewer than eight), the first lowest, zero
    /// past the end: no literal has a zero byte.
    private static func lastWord(_ subject: Span<UInt8>, _ start: Int) -> UInt64 {
        var word: UInt64 = 0
        for offset in 0..<(subject.count &- start) { word |= UInt64(subject[start &+ offset]) << UInt64(8 * offset) }
        return word
    }

    /// `word`'s capital letters lower-cased, all its bytes below 0x80: a byte gets its top bit
    /// from adding 0x3F when it is `A` or above, and from adding 0x25 when it is above `Z`.
    @inline(__always)
    private static func lowercased(_ word: UInt64) -> UInt64 {
        let fromA = word &+ 0x3F3F_3F3F_3F3F_3F3F
        let pastZ = word &+ 0x2525_2525_2525_2525
        return word | ((fromA & ~pastZ & 0x8080_8080_8080_8080) >> 2)
    }
}

/// The literals of a ``LiteralSet`` found in one subject: bit `n` for literal `n`, kept on the
/// stack for up to 512 literals (64 bytes), in an array beyond.
struct FoundLiterals {
    private var inline = InlineArray<8, UInt64>(repeating: 0)
    private var more: [UInt64] = []

    /// Room for `count` literals, none found.
    init(count: Int) {
        if count > 512 { more = [UInt64](repeating: 0, count: (count + 63) / 64 - 8) }
    }

    /// Whether literal `number` was found.
    @inline(__always)
    func contains(_ number: Int) -> Bool {
        let word = number &>> 6
        let bits = word < 8 ? inline[word] : more[word &- 8]
        return bits &>> UInt64(truncatingIfNeeded: number & 63) & 1 != 0
    }

    /// Whether some literal of `mask` was found.
    @inline(__always)
    func intersects(_ mask: LiteralMask) -> Bool {
        for (offset, bits) in mask.words.enumerated() {
            let word = mask.firstWord &+ offset
            if (word < 8 ? inline[word] : more[word &- 8]) & bits != 0 { return true }
        }
        return false
    }

    /// Whether every literal of `mask` was found.
    @inline(__always)
    func containsAll(_ mask: LiteralMask) -> Bool {
        for (offset, bits) in mask.words.enumerated() {
            let word = mask.firstWord &+ offset
            if (word < 8 ? inline[word] : more[word &- 8]) & bits != bits { return false }
        }
        return true
    }

    /// Records literal `number` as found.
    @inline(__always)
    mutating func insert(_ number: Int) {
        let word = number &>> 6
        let bit: UInt64 = 1 &<< UInt64(truncatingIfNeeded: number & 63)
        if word < 8 { inline[word] |= bit } else { more[word &- 8] |= bit }
    }
}

/// A set of literals of a ``LiteralSet``, as the words of ``FoundLiterals`` that hold them: one
/// test tells whether any of them was found.
struct LiteralMask: Sendable {
    /// The literals, ascending.
    let numbers: [Int]
    /// The word of ``FoundLiterals`` that ``words`` starts at.
    let firstWord: Int
    /// Bit `n` of word `w`: literal `64 × (firstWord + w) + n` is in the mask.
    let words: [UInt64]

    /// The mask of literals `numbers`.
    init(_ numbers: [Int]) {
        let sorted = Array(Set(numbers)).sorted()
        self.numbers = sorted
        let first = (sorted.first ?? 0) >> 6
        var words = [UInt64](repeating: 0, count: ((sorted.last ?? 0) >> 6) - first + 1)
        for number in sorted { words[(number >> 6) - first] |= 1 << UInt64(number & 63) }
        self.firstWord = first
        self.words = words
    }
}
