import Testing

@testable import AuditPolicy

/// The shortcuts' literal search (`literal_pair_starts` and the eight-byte comparisons after it)
/// against the same question asked byte by byte.
@Suite struct LiteralSetTests {
    /// Bytes the literals and subjects are made of: a few letters in both cases, so that literals
    /// share first pairs and overlap, and printable bytes that are not letters.
    private static let alphabet = Array("abAB./%0".utf8)

    /// Whether `literal` (lower-case) occurs in `subject`, capitals lower-cased.
    private static func occurs(_ literal: [UInt8], in subject: [UInt8]) -> Bool {
        let lowered = subject.map { $0 &- UInt8(ascii: "A") < 26 ? $0 | 0x20 : $0 }
        guard lowered.count >= literal.count else { return false }
        return (0...(lowered.count - literal.count)).contains { Array(lowered[$0..<$0 + literal.count]) == literal }
    }

    private static func randomBytes(count: Int, using random: inout SystemRandomNumberGenerator) -> [UInt8] {
        (0..<count).map { _ in alphabet[Int.random(in: alphabet.indices, using: &random)] }
    }

    @Test(
        "the literals found are those that occur, in either case, at every place in subjects of every length",
        arguments: [1, 12, 600])
    func agreesWithByteByByte(literalCount: Int) {
        var random = SystemRandomNumberGenerator()
        for _ in 0..<(literalCount > 100 ? 40 : 400) {
            // Two to twenty bytes: shorter and longer than the eight compared at once.
            let literals = (0..<literalCount).map { _ in
                Self.randomBytes(count: Int.random(in: 2...20, using: &random), using: &random).map {
                    $0 &- UInt8(ascii: "A") < 26 ? $0 | 0x20 : $0
                }
            }
            let set = LiteralSet(literals)
            let subject = Self.randomBytes(count: Int.random(in: 0...150, using: &random), using: &random)
            var found = FoundLiterals(count: literals.count)
            set.search(subject.span, found: &found)
            let expected = literals.indices.filter { Self.occurs(literals[$0], in: subject) }
            #expect(literals.indices.filter { found.contains($0) } == expected, "\(subject)")
        }
    }

    @Test("a literal that runs past the subject's end is not found, whatever the bytes after it in memory")
    func literalPastTheEnd() {
        let set = LiteralSet([Array("abcdefghij".utf8), Array("xyz".utf8), Array("hij".utf8)])
        let memory = Array("--xyabcdefghij".utf8)
        for end in 2...memory.count {
            var found = FoundLiterals(count: 3)
            set.search(memory.span.extracting(0..<end), found: &found)
            #expect(found.contains(0) == (end == memory.count), "subject of \(end) bytes")
            #expect(found.contains(2) == (end == memory.count), "subject of \(end) bytes")
            #expect(!found.contains(1))
        }
    }

    @Test(
        "the pair kernel marks the places of the pairs set in either case, 64 at most a call, from every start"
    )
    func pairStartsAgreeWithByteByByte() {
        var random = SystemRandomNumberGenerator()
        let bytes = Array("aAbB/.%0".utf8) + [0x7E, 0x20]
        for _ in 0..<2_000 {
            var pairs = PairBits()
            var wanted: Set<[UInt8]> = []
            for _ in 0..<Int.random(in: 1...6, using: &random) {
                let pair = (0..<2).map { _ in ConditionAnalysis.lowercased(bytes.randomElement(using: &random) ?? 0) }
                wanted.insert(pair)
                pairs.insertInEitherCase(pair[0], then: pair[1])
            }
            let subject = (0..<Int.random(in: 0...140, using: &random)).map { _ in
                bytes.randomElement(using: &random) ?? 0
            }
            let start = Int.random(in: 0...subject.count + 1, using: &random)
            var expected: UInt64 = 0
            if start < subject.count - 1 {
                for position in start..<min(start + 64, subject.count - 1) {
                    let pair = [subject[position], subject[position + 1]].map(ConditionAnalysis.lowercased)
                    if wanted.contains(pair) { expected |= 1 << UInt64(position - start) }
                }
            }
            #expect(subject.span.pairStarts(from: start, in: pairs.words.span) == expected, "\(subject) from \(start)")
        }
    }

    @Test("a pair set with a byte then any byte is found before every byte, the last pair included")
    func pairThenAnyByte() {
        var pairs = PairBits()
        pairs.insertInEitherCase(UInt8(ascii: "q"), then: nil)
        let subject = Array("xQ/qa~Qz".utf8)
        #expect(subject.span.pairStarts(from: 0, in: pairs.words.span) == 0b0100_1010)
    }

    @Test("a subject is printable ASCII when every byte is from space to tilde, at any place in it")
    func printableASCII() {
        for length in 0...40 {
            let subject = [UInt8](repeating: UInt8(ascii: "a"), count: length)
            #expect(Self.isPrintable(subject))
            for position in 0..<length {
                for odd: UInt8 in [0x00, 0x1F, 0x7F, 0x80, 0xFF] {
                    var changed = subject
                    changed[position] = odd
                    #expect(!Self.isPrintable(changed), "\(odd) at \(position) of \(length)")
                }
                for edge: UInt8 in [0x20, 0x7E] {
                    var changed = subject
                    changed[position] = edge
                    #expect(Self.isPrintable(changed))
                }
            }
        }
    }

    private static func isPrintable(_ bytes: [UInt8]) -> Bool { bytes.span.isPrintableASCII }

    @Test("a pair table of the wrong size stops the process")
    func pairTableOfTheWrongSizeTraps() async {
        await #expect(processExitsWith: .failure) {
            let pairs = [UInt64](repeating: 0, count: 255)
            _ = Array("abc".utf8).span.pairStarts(from: 0, in: pairs.span)
        }
    }
}
