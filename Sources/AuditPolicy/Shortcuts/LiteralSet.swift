/// Literal strings searched for in a subject all at once, without case: which of them occur.
///
/// Each literal (two bytes or more, letters lower-case) is filed under its first two bytes; one
/// pass over the subject tests each position's two bytes against a 65,536-bit set of those first
/// pairs, and compares only the literals filed under the few pairs that pass.
struct LiteralSet: Sendable {
    /// Number of literals.
    let count: Int
    /// Every literal's bytes, one after another; literal `n` is `bytes[starts[n]..<starts[n + 1]]`.
    private let bytes: [UInt8]
    private let starts: [Int32]
    /// Bit `first << 8 | second` set when some literal starts with those two bytes.
    private let pairGate: [UInt64]
    /// The distinct first pairs, ascending; the literals of `pairs[i]` are
    /// `literalsByPair[pairStarts[i]..<pairStarts[i + 1]]`.
    private let pairs: [UInt16]
    private let pairStarts: [Int32]
    /// The pairs starting with byte `b` are `pairs[pairsByFirstByte[b]..<pairsByFirstByte[b + 1]]`.
    private let pairsByFirstByte: [Int32]
    private let literalsByPair: [Int32]

    /// The set of `literals`, each two bytes or more, letters lower-case; bit `n` of a search's
    /// result stands for `literals[n]`.
    init(_ literals: [[UInt8]]) {
        count = literals.count
        bytes = literals.flatMap { $0 }
        starts = literals.reduce(into: [0]) { $0.append($0[$0.count - 1] + Int32($1.count)) }
        var gate = [UInt64](repeating: 0, count: 1024)
        var byPair: [UInt16: [Int32]] = [:]
        for (number, literal) in literals.enumerated() {
            precondition(literal.count >= 2, "a literal of the set has two bytes or more")
            let pair = UInt16(literal[0]) << 8 | UInt16(literal[1])
            gate[Int(pair >> 6)] |= 1 << UInt64(pair & 63)
            byPair[pair, default: []].append(Int32(number))
        }
        pairGate = gate
        pairs = byPair.keys.sorted()
        var byFirstByte = [Int32](repeating: 0, count: 257)
        for pair in pairs { byFirstByte[Int(pair >> 8) + 1] += 1 }
        for byte in 1...256 { byFirstByte[byte] += byFirstByte[byte - 1] }
        pairsByFirstByte = byFirstByte
        pairStarts = pairs.reduce(into: [0]) { $0.append($0[$0.count - 1] + Int32(byPair[$1]?.count ?? 0)) }
        literalsByPair = pairs.flatMap { byPair[$0] ?? [] }
    }

    /// Adds to `found` each literal that occurs in `subject`, compared without case.
    func search(_ subject: Span<UInt8>, found: inout FoundLiterals) {
        guard subject.count >= 2, count > 0 else { return }
        let gate = pairGate.span
        var previous = ConditionAnalysis.lowercased(subject[0])
        for position in 1..<subject.count {
            let next = ConditionAnalysis.lowercased(subject[position])
            let pair = UInt16(previous) << 8 | UInt16(next)
            previous = next
            guard gate[Int(pair >> 6)] >> UInt64(pair & 63) & 1 != 0 else { continue }
            markLiterals(startingWith: pair, at: position - 1, in: subject, found: &found)
        }
    }

    private func markLiterals(
        startingWith pair: UInt16, at start: Int, in subject: Span<UInt8>, found: inout FoundLiterals
    ) {
        let first = Int(pair >> 8)
        var index = Int(pairsByFirstByte[first])
        let end = Int(pairsByFirstByte[first + 1])
        while index < end, pairs[index] != pair { index += 1 }
        guard index < end else { return }
        for slot in Int(pairStarts[index])..<Int(pairStarts[index + 1]) {
            let number = Int(literalsByPair[slot])
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
