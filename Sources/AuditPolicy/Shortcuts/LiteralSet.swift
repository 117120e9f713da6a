/// Literal strings searched for in a subject of printable ASCII all at once, without case: which
/// of them occur.
///
/// Each literal (two bytes or more, letters lower-case) is filed under its first two bytes; one
/// pass over the subject looks each position's two bytes up in a table of the 95 × 95 printable
/// pairs, and compares only the literals filed under the few pairs found there.
struct LiteralSet: Sendable {
    /// Number of literals.
    let count: Int
    /// Every literal's bytes, one after another; literal `n` is `bytes[starts[n]..<starts[n + 1]]`.
    private let bytes: [UInt8]
    private let starts: [Int32]
    /// For the pair of printable bytes `first`, `second`: 1 + the number of its group of
    /// literals, at `(first - 0x20) × 95 + second - 0x20`; 0 when no literal starts with it.
    private let pairGroups: [UInt16]
    /// The literals of group `g` are `literalsByGroup[groupStarts[g]..<groupStarts[g + 1]]`.
    private let groupStarts: [Int32]
    private let literalsByGroup: [Int32]

    private static let printableCount = 95

    /// The set of `literals`, each two bytes or more, letters lower-case; bit `n` of a search's
    /// result stands for `literals[n]`. A literal with a byte outside printable ASCII is never
    /// found.
    init(_ literals: [[UInt8]]) {
        count = literals.count
        bytes = literals.flatMap { $0 }
        starts = literals.reduce(into: [0]) { $0.append($0[$0.count - 1] + Int32($1.count)) }
        var byPair: [Int: [Int32]] = [:]
        for (number, literal) in literals.enumerated() {
            precondition(literal.count >= 2, "a literal of the set has two bytes or more")
            guard literal.allSatisfy({ $0 &- 0x20 < 0x5F }) else { continue }
            byPair[Self.pairIndex(literal[0], literal[1]), default: []].append(Int32(number))
        }
        precondition(byPair.count < Int(UInt16.max), "fewer groups than a UInt16 numbers")
        var groups = [UInt16](repeating: 0, count: Self.printableCount * Self.printableCount)
        var groupStarts: [Int32] = [0]
        var literalsByGroup: [Int32] = []
        for pair in byPair.keys.sorted() {
            groups[pair] = UInt16(groupStarts.count)
            literalsByGroup += byPair[pair] ?? []
            groupStarts.append(Int32(literalsByGroup.count))
        }
        pairGroups = groups
        self.groupStarts = groupStarts
        self.literalsByGroup = literalsByGroup
    }

    @inline(__always)
    private static func pairIndex(_ first: UInt8, _ second: UInt8) -> Int {
        Int(first &- 0x20) &* printableCount &+ Int(second &- 0x20)
    }

    /// Adds to `found` each literal that occurs in `subject`, compared without case. Every byte of
    /// `subject` is printable ASCII (0x20–0x7E).
    func search(_ subject: Span<UInt8>, found: inout FoundLiterals) {
        guard subject.count >= 2, count > 0 else { return }
        let groups = pairGroups.span
        var previous = ConditionAnalysis.lowercased(subject[0])
        for position in 1..<subject.count {
            let next = ConditionAnalysis.lowercased(subject[position])
            let group = Int(groups[Self.pairIndex(previous, next)])
            previous = next
            guard group != 0 else { continue }
            markLiterals(of: group &- 1, at: position &- 1, in: subject, found: &found)
        }
    }

    private func markLiterals(of group: Int, at start: Int, in subject: Span<UInt8>, found: inout FoundLiterals) {
        for slot in Int(groupStarts[group])..<Int(groupStarts[group + 1]) {
            let number = Int(literalsByGroup[slot])
            guard !found.contains(number), occurs(number, at: start, in: subject) else { continue }
            found.insert(number)
        }
    }

    /// Whether literal `number`, whose first two bytes are known to be there, occurs at `start`.
    private func occurs(_ number: Int, at start: Int, in subject: Span<UInt8>) -> Bool {
        let first = Int(starts[number])
        let length = Int(starts[number + 1]) - first
        guard start + length <= subject.count else { return false }
        var offset = 2
        while offset < length {
            guard ConditionAnalysis.lowercased(subject[start + offset]) == bytes[first + offset] else { return false }
            offset += 1
        }
        return true
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
