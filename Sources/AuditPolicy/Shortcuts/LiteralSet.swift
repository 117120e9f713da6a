internal import CByteClasses

/// Literal strings searched for in a subject of printable ASCII all at once, without case: which
/// of them occur.
///
/// Each literal (two bytes or more, letters lower-case) is filed under its first two bytes. The C
/// kernel `literal_set_search` finds the positions where such a pair stands, in either case, 64
/// at a time and without a branch per position; at each, the literals filed under the pair are
/// compared eight bytes at a time against the subject's bytes there, lower-cased.
struct LiteralSet: Sendable {
    /// One literal of a pair's group (see `LiteralEntry`).
    private typealias Entry = LiteralEntry

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
                        head: head, head_mask: literal.count >= 8 ? ~0 : (1 << UInt64(8 * literal.count)) - 1,
                        number: number, length: Int32(literal.count), tail: Int32(tails.count), reserved: 0))
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
        precondition(found.wordCount * 64 >= count, "a bit for each literal")
        unsafe found.withUnsafeWords { found in
            unsafe subject.withUnsafeBufferPointer { subject in
                unsafe pairs.words.withUnsafeBufferPointer { pairs in
                    unsafe pairGroups.withUnsafeBufferPointer { groups in
                        unsafe groupStarts.withUnsafeBufferPointer { groupStarts in
                            unsafe entries.withUnsafeBufferPointer { entries in
                                unsafe tails.withUnsafeBufferPointer { tails in
                                    unsafe literal_set_search(
                                        subject.baseAddress, subject.count, pairs.baseAddress, groups.baseAddress,
                                        groupStarts.baseAddress, entries.baseAddress, tails.baseAddress, found)
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The literals of a ``LiteralSet`` found in one subject: bit `n` for literal `n`, kept on the
/// stack for up to 512 literals (64 bytes), in an array beyond.
///
/// With ``LiteralSet``, the owner of the raw memory a search writes: the words are lent to the C
/// kernel only inside ``withUnsafeWords(_:)``, for as many literals as ``init(count:)`` made room.
@safe struct FoundLiterals {
    private var inline = InlineArray<8, UInt64>(repeating: 0)
    /// Every word, for more than 512 literals (``inline`` is then unused); empty otherwise.
    private var more: [UInt64] = []

    /// Room for `count` literals, none found.
    init(count: Int) {
        if count > 512 { more = [UInt64](repeating: 0, count: (count + 63) / 64) }
    }

    /// How many words there are: 64 literals a word.
    var wordCount: Int { more.isEmpty ? 8 : more.count }

    /// Calls `body` with the words, for the C kernel to set bits in.
    mutating func withUnsafeWords<Result>(_ body: (UnsafeMutablePointer<UInt64>?) -> Result) -> Result {
        if more.isEmpty {
            var words = inline.mutableSpan
            return unsafe words.withUnsafeMutableBufferPointer { unsafe body($0.baseAddress) }
        }
        return unsafe more.withUnsafeMutableBufferPointer { unsafe body($0.baseAddress) }
    }

    @inline(__always)
    private func word(_ index: Int) -> UInt64 {
        more.isEmpty ? inline[index] : more[index]
    }

    /// Whether literal `number` was found.
    @inline(__always)
    func contains(_ number: Int) -> Bool {
        word(number &>> 6) &>> UInt64(truncatingIfNeeded: number & 63) & 1 != 0
    }

    /// Whether some literal of `mask` was found.
    @inline(__always)
    func intersects(_ mask: LiteralMask) -> Bool {
        for (offset, bits) in mask.words.enumerated() where word(mask.firstWord &+ offset) & bits != 0 { return true }
        return false
    }

    /// Whether every literal of `mask` was found.
    @inline(__always)
    func containsAll(_ mask: LiteralMask) -> Bool {
        for (offset, bits) in mask.words.enumerated() where word(mask.firstWord &+ offset) & bits != bits {
            return false
        }
        return true
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
