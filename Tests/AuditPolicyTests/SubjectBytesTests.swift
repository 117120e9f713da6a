import Testing

@testable import AuditPolicy

/// The index reads a subject's bytes through `Span`: a read outside the subject stops the process
/// instead of reading memory it does not own, and the kernels' results match byte-by-byte reads.
@Suite struct SubjectBytesTests {
    @Test("a word is loaded with its first byte lowest, up to the subject's last byte")
    func wordsLoadLittleEndian() {
        let bytes: [UInt8] = [1, 2, 3, 4, 5, 6, 7, 8, 9]
        #expect(bytes.span.word64(at: 1) == 0x0908_0706_0504_0302)
        #expect(bytes.span.word32(at: 5) == 0x0908_0706)
        #expect(bytes.span.word16(at: 7) == 0x0908)
    }

    @Test("a word reaching past the subject's end stops the process")
    func wordPastTheEndTraps() async {
        await #expect(processExitsWith: .failure) {
            let bytes: [UInt8] = Array("https://x".utf8)
            _ = bytes.span.word64(at: 2)
        }
    }

    @Test("a byte outside the subject reads as zero")
    func byteOrZero() {
        let bytes: [UInt8] = Array("ab".utf8)
        #expect([-1, 0, 1, 2].map { bytes.span.byteOrZero(at: $0) } == [0, 0x61, 0x62, 0])
    }

    @Test("a byte is found only between the bounds given, which are clamped to the subject")
    func firstIndexWithinBounds() {
        let bytes: [UInt8] = Array("a#b#c".utf8)
        let hash = UInt8(ascii: "#")
        #expect(bytes.span.firstIndex(of: hash, from: 0, to: 5) == 1)
        #expect(bytes.span.firstIndex(of: hash, from: 2, to: 5) == 3)
        #expect(bytes.span.firstIndex(of: hash, from: 2, to: 3) == nil)
        #expect(bytes.span.firstIndex(of: hash, from: 2, to: 99) == 3)
        #expect(bytes.span.firstIndex(of: hash, from: 9, to: 99) == nil)
    }

    @Test("the authority ends at the first slash, question mark or number sign from where it starts")
    func authorityEnd() {
        var random = SystemRandomNumberGenerator()
        let alphabet = Array("ab.:@-%/?#".utf8)
        for _ in 0..<2_000 {
            let bytes = (0..<Int.random(in: 0...70, using: &random)).map { _ in
                alphabet[Int.random(in: alphabet.indices, using: &random)]
            }
            let from = Int.random(in: 0...bytes.count + 1, using: &random)
            let expected =
                from < bytes.count
                ? (bytes[from...].firstIndex {
                    $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#")
                }
                    ?? bytes.count) : bytes.count
            #expect(
                bytes.span.authorityEnd(from: from) == expected, "\(String(decoding: bytes, as: UTF8.self)) \(from)")
        }
    }

    @Test("a word's bytes are lower-cased as each byte is on its own, for every byte value")
    func wordLowerCasing() {
        var random = SystemRandomNumberGenerator()
        let values = (0..<64).map { UInt8($0 * 4) } + Array(UInt8(ascii: "@")...UInt8(ascii: "["))
        for _ in 0..<20_000 {
            let bytes = (0..<8).map { _ in
                Bool.random(using: &random)
                    ? values[Int.random(in: values.indices, using: &random)] : UInt8.random(in: 0...255, using: &random)
            }
            // The first byte lowest.
            let word = bytes.reversed().reduce(0) { $0 << 8 | UInt64($1) }
            let expected = bytes.reversed().reduce(0) { $0 << 8 | UInt64(RuleIndex.FieldGroup.lowered($1)) }
            #expect(RuleIndex.FieldGroup.lowered(word) == expected, "\(bytes)")
        }
    }

    @Test("a block of byte classes that does not lie inside the subject stops the process")
    func byteClassesOutsideTraps() async {
        await #expect(processExitsWith: .failure) {
            let bytes: [UInt8] = Array("abc".utf8)
            _ = bytes.span.byteClasses(from: 1, length: 64)
        }
    }

    @Test("a pair search with an active pair the keys lack stops the process")
    func pairSearchWithMissingPairTraps() async {
        await #expect(processExitsWith: .failure) {
            let bytes: [UInt8] = Array("abcdef".utf8)
            let firsts: [UInt8] = [UInt8(ascii: "c")]
            let seconds: [UInt8] = [UInt8(ascii: "d")]
            _ = bytes.span.nextPairStart(
                from: 0, firsts: firsts.span, seconds: seconds.span, active: 0b11, withoutSecond: 0)
        }
    }

    @Test("reading a candidate past the list's end stops the process")
    func candidatePastTheEndTraps() async {
        await #expect(processExitsWith: .failure) {
            CandidateList.withEmptyList { list in
                list.append(3)
                _ = list[1]
            }
        }
    }

    @Test("a field's found literals are exact past the 512 kept on the stack", arguments: [1, 64, 512, 513, 1_300])
    func foundLiterals(count: Int) {
        let literals = (0..<count).map { Array("k\($0)z".utf8) }
        let present = (0..<count).filter { $0 % 7 == 0 || $0 == count - 1 }
        let subject = Array(present.map { "/K\($0)Z" }.joined().utf8)
        var found = FoundLiterals(count: count)
        LiteralSet(literals).search(subject.span, found: &found)
        #expect((0..<count).filter { found.contains($0) } == present)
    }
}
