import Testing

@testable import AuditPolicy

/// The tokens of `bytes` read one byte at a time: the definition the block-at-a-time scanner must meet.
private func tokensByteByByte(_ bytes: [UInt8]) -> [Range<Int>]? {
    for index in bytes.indices {
        if bytes[index] == 0xC5, index + 1 < bytes.count, bytes[index + 1] == 0xBF { return nil }
        if bytes[index] == 0xE2, index + 2 < bytes.count, bytes[index + 1] == 0x84, bytes[index + 2] == 0xAA {
            return nil
        }
    }
    func isAlnum(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
    }
    var tokens: [Range<Int>] = []
    var start: Int?
    for index in bytes.indices {
        if isAlnum(bytes[index]) {
            if start == nil { start = index }
        } else if let tokenStart = start {
            tokens.append(tokenStart..<index)
            start = nil
        }
    }
    if let start { tokens.append(start..<bytes.count) }
    return tokens
}

private func scannedTokens(_ bytes: [UInt8]) -> [Range<Int>]? {
    scan(bytes).tokens
}

/// The scanner's tokens (nil when it gave up) and whether it found the subject to be ASCII.
private func scan(_ bytes: [UInt8]) -> (tokens: [Range<Int>]?, isASCII: Bool) {
    var tokens: [Range<Int>] = []
    var isASCII = true
    let isTokenizable = TokenScanner.forEachToken(in: bytes.span, isASCII: &isASCII) { tokens.append($0..<$1) }
    return (isTokenizable ? tokens : nil, isASCII)
}

@Suite struct TokenScannerTests {
    @Test("the block-at-a-time scanner finds exactly the tokens a byte-by-byte reading finds")
    func scannerMatchesDefinition() {
        // Bytes around every class boundary, control bytes that set bit 5 turns into digits, high
        // bytes (some a letter or digit but for the top bit), and the lead bytes of K and ſ.
        let alphabet: [UInt8] =
            Array("09azAZ/@[`{:._-%~".utf8) + [0x00, 0x1F, 0x2F, 0x3A, 0x40, 0x5B, 0x60, 0x7B, 0x7F, 0x80, 0xC5, 0xBF]
            + [0xE2, 0x84, 0xAA, 0xFF, 0xDF, 0xE0] + [0x10, 0x19, 0x0A, 0xB0, 0xB9, 0xC1, 0xDA, 0xE1, 0xFA]
        var random = SystemRandomNumberGenerator()
        for length in 0...200 {
            for _ in 0..<40 {
                let bytes = (0..<length).map { _ in alphabet.randomElement(using: &random) ?? 0 }
                #expect(scannedTokens(bytes) == tokensByteByByte(bytes), "\(bytes)")
            }
        }
    }

    @Test("the scanner finds a subject to be ASCII exactly when no byte is 0x80 or more")
    func scannerLearnsASCII() {
        // One high byte at every position of subjects of every length up to 200, and none.
        for length in 1...200 {
            let ascii = [UInt8](repeating: UInt8(ascii: "a"), count: length)
            #expect(scan(ascii).isASCII, "length \(length)")
            for position in 0..<length {
                var bytes = ascii
                bytes[position] = 0xE9
                #expect(!scan(bytes).isASCII, "length \(length), at \(position)")
            }
        }
    }

    @Test("a Kelvin sign or long s anywhere, across word and block edges, makes the scanner give up")
    func foldingCharactersAnywhere() {
        for sequence in [[UInt8(0xE2), 0x84, 0xAA], [0xC5, 0xBF]] {
            for position in 0..<140 {
                var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: 150)
                bytes.replaceSubrange(position..<position + sequence.count, with: sequence)
                #expect(scannedTokens(bytes) == nil, "at \(position)")
            }
        }
    }

    @Test("a token hashes the same wherever it sits in the subject and in whatever case")
    func tokenHashIsPositionIndependent() {
        for text in ["a", "ab", "ads", "doubleclick", "abcdefgh", "abcdefghi", "x1y2z3w4v5u6t7s8r9", "0"] {
            let expected = IndexKey(kind: .token, text: Array(text.utf8)).hashValue64
            for before in 0..<12 {
                for after in 0..<12 {
                    let bytes =
                        Array(String(repeating: "/", count: before).utf8) + Array(text.uppercased().utf8)
                        + Array(String(repeating: "?", count: after).utf8)
                    let hash = IndexKey.tokenHash(bytes.span, before, before + text.utf8.count)
                    #expect(hash == expected, "\(text) after \(before), before \(after)")
                }
            }
        }
    }

    @Test("tokens that differ only in length or in their last bytes hash differently")
    func tokenHashesAreDistinct() {
        // Every token of up to three letters and digits, and every start of two long tokens: the
        // hash mixes in no length, so these are the tokens a careless last word would confuse.
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)
        var texts: [[UInt8]] = alphabet.map { [$0] }
        for first in alphabet {
            for second in alphabet {
                texts.append([first, second])
                for third in alphabet { texts.append([first, second, third]) }
            }
        }
        for long in ["aaaaaaaaaaaaaaaaaaaaaaaa", "x1y2z3w4v5u6t7s8r9q0p1o2"] {
            let bytes = Array(long.utf8)
            texts += (4...bytes.count).map { Array(bytes.prefix($0)) }
        }
        var seen: [UInt64: [UInt8]] = [:]
        for text in texts {
            let hash = IndexKey(kind: .token, text: text).hashValue64
            #expect(seen[hash] == nil, "\(String(decoding: text, as: UTF8.self))")
            seen[hash] = text
        }
        #expect(seen.count == texts.count)
    }

    @Test("the C token hasher gives the Swift scanner's tokens, their Swift hashes and the same flags")
    func kernelMatchesScannerAndHash() {
        // Long tokens (hashed eight bytes at a time, across block edges), short ones near the
        // start (hashed byte by byte), high bytes, and the Kelvin sign and long s.
        let pieces: [[UInt8]] =
            [
                "a", "Zq", "doubleclick", "ABCDEFGH", "abcdefghi", String(repeating: "x9", count: 40), "/", "?", "=",
                "..",
            ]
            .map { Array($0.utf8) } + [[0xE9], [0xC3, 0xA9], [0xE2, 0x84, 0xAA], [0xC5, 0xBF], [0x00], [0x10]]
        var random = SystemRandomNumberGenerator()
        for _ in 0..<3_000 {
            var bytes: [UInt8] = []
            for _ in 0..<Int.random(in: 0...30, using: &random) {
                bytes += pieces.randomElement(using: &random) ?? []
            }
            let expected = scan(bytes)
            let hashed = TokenHashes.withTokens(ofSubjectLength: bytes.count) { tokens in
                let result = tokens.append(tokensOf: bytes.span)
                return (result, tokens.tokens)
            }
            #expect(hashed.0.isTokenizable == (expected.tokens != nil), "\(bytes)")
            #expect(hashed.0.isASCII == expected.isASCII, "\(bytes)")
            guard let ranges = expected.tokens else { continue }
            #expect(hashed.1.map { Int($0.start)..<Int($0.end) } == ranges, "\(bytes)")
            #expect(hashed.1.map(\.hash) == ranges.map { IndexKey.tokenHash(bytes.span, $0.lowerBound, $0.upperBound) })
        }
    }

    @Test("up to 64 tokens answer membership exactly, by search for a few and by hash set for more")
    func tokenMembership() {
        var random = SystemRandomNumberGenerator()
        for count in [0, 1, 5, 16, 17, 40, 64] {
            // Hashes sharing their low bits crowd one slot of the set; random ones spread.
            let hashes = (0..<count).map { index in
                index % 2 == 0 ? UInt64(index + 1) << 32 : UInt64.random(in: 1...UInt64.max, using: &random)
            }
            let others = (0..<2_000).map { _ in UInt64.random(in: 1...UInt64.max, using: &random) }
            TokenHashes.withTokens(ofSubjectLength: count * 2) { tokens in
                for (index, hash) in hashes.enumerated() { tokens.append(hash, start: index, end: index + 1) }
                #expect(tokens.tokens.map(\.hash) == hashes, "\(count) tokens")
                #expect(hashes.allSatisfy { tokens.contains($0) }, "\(count) tokens")
                #expect(
                    others.filter { tokens.contains($0) } == others.filter { hashes.contains($0) }, "\(count) tokens")
            }
        }
    }
}

@Suite struct TokenMembershipTests {
    /// How many of `absent` the tokens of `text` say they have, after checking that they say yes
    /// for every token they do have (subjects of up to 64 tokens: see TokenScannerTests).
    private static func falseYeses(in text: String, absent: [String]) -> Int {
        let bytes = Array(text.utf8)
        return TokenHashes.withTokens(ofSubjectLength: bytes.count) { tokens in
            _ = tokens.append(tokensOf: bytes.span)
            var denied = 0
            for token in tokens.tokens where !tokens.contains(token.hash) { denied += 1 }
            #expect(denied == 0, "\(text.prefix(40))…")
            return absent.count { word in
                tokens.contains(IndexKey.tokenHash(word.utf8.span, 0, word.utf8.count))
            }
        }
    }

    @Test("a longer subject never denies a token it has, and wrongly claims few", arguments: [65, 300, 3_000])
    func longSubjectHasFewFalseYeses(count: Int) {
        #expect(count > TokenHashes.exactTokenLimit)
        let text = "https://x.test/?" + (0..<count).map { "t\($0)" }.joined(separator: "&")
        // About 16 bits and two of them per token: about 1.4 % of other tokens pass.
        #expect(Self.falseYeses(in: text, absent: (0..<10_000).map { "u\($0)" }) < 400)
    }
}
