import AuditLocking
import AuditRegex
import Dispatch

extension RuleIndex.FieldGroup {
    /// Appends the rules of this group that a subject made of `bytes` may match, and returns true;
    /// with `requiringASCII`, returns false having appended nothing if some byte is 0x80 or more
    /// (the raw bytes of such a URL do not stand for its normalized form; see
    /// ``RuleIndex/collectCandidates(forURLOf:into:)``). The check is part of the scan for tokens.
    @discardableResult
    @inline(__always)
    func collect(
        in bytes: Span<UInt8>, into candidates: inout CandidateList, requiringASCII: Bool = false
    )
        -> Bool
    {
        collect(
            in: bytes, into: &candidates, requiringASCII: requiringASCII,
            marksTokens: bytes.count < TokenHashes.markableSubject)
    }

    /// ``collect(in:into:requiringASCII:)``, the tokens that pass a gate marked by the hasher when
    /// `marksTokens` (possible for a subject of fewer than ``TokenHashes/markableSubject`` bytes),
    /// or asked one by one in Swift otherwise, which finds the same rules.
    @inline(__always)
    func collect(
        in bytes: Span<UInt8>, into candidates: inout CandidateList, requiringASCII: Bool, marksTokens: Bool
    ) -> Bool {
        // First every token's hash (rules filed with a second token are checked against these),
        // marking those that pass a gate, then the lookups.
        let authority = hasAuthorityKeys ? Self.authority(in: bytes) : 0..<0
        return TokenHashes.withTokens(ofSubjectLength: bytes.count) { tokens in
            let scan =
                marksTokens
                ? tokens.append(tokensOf: bytes, marking: marking, authority: authority)
                : tokens.append(tokensOf: bytes)
            if requiringASCII, !scan.isASCII { return false }
            if !alwaysRun.isEmpty { candidates.append(contentsOf: alwaysRun) }
            guard scan.isTokenizable else {
                candidates.append(contentsOf: all)
                return true
            }
            collect(in: bytes, authority: authority, tokens: &tokens, into: &candidates)
            return true
        }
    }

    /// Looks up the tokens of the subject that pass some gate, and with many infix keys the places
    /// where one may start.
    ///
    /// Which tokens pass was found with the tokens themselves, by the C kernel that hashes them
    /// (`index_hash_tokens`), which reads the token gate, the gates of the start and end
    /// keys and, for the tokens of the authority, the authority gate, with no branch per token;
    /// only the few that pass are looked at again. A loop that asked each token every question in
    /// turn spent more on branches and on moving its state between registers and the stack than
    /// on the questions.
    private func collect(
        in bytes: Span<UInt8>, authority: Range<Int>, tokens: inout TokenHashes, into candidates: inout CandidateList
    ) {
        if let fewInfixKeys { collect(fewInfixKeys, in: bytes, &tokens, into: &candidates) }
        if checksInfixGate { collectInfixes(in: bytes, &tokens, into: &candidates) }
        guard tokens.isMarked else {
            for index in 0..<tokens.count {
                let token = tokens[index]
                let (start, end) = (Int(token.start), Int(token.end))
                let marks =
                    (checksTokenGate ? tokenGate.flags(token.hash) : 0)
                    | (hasPrefixKeys && prefixStarts.mayMatch(bytes, start, end, backwards: false)
                        ? Self.mayHavePrefix : 0)
                    | (hasSuffixKeys && suffixEnds.mayMatch(bytes, start, end, backwards: true)
                        ? Self.mayHaveSuffix : 0)
                    | (authority.contains(start) ? authorityGate.flags(token.hash) &<< 4 : 0)
                collect(at: index, marks: marks, bytes, authority: authority, &tokens, into: &candidates)
            }
            return
        }
        for position in 0..<tokens.markedCount {
            let entry = tokens.marked(position)
            collect(
                at: Int(entry &>> 6), marks: UInt8(truncatingIfNeeded: entry & 63), bytes, authority: authority,
                &tokens, into: &candidates)
        }
    }

    /// What the marker found of a token, besides the token gate's ``TokenGate/mayBeKey`` and
    /// ``TokenGate/mayStartPair``: it may start with a prefix key, or end with a suffix key (see
    /// ``AffixGate/mayMatch(_:_:_:backwards:)``); it lies in the authority, and the authority
    /// gate's ``TokenGate/mayBeKey`` (``TokenGate/mayStartPair``) is set for it.
    static let mayHavePrefix: UInt8 = 4
    static let mayHaveSuffix: UInt8 = 8
    static let mayBeAuthorityKey: UInt8 = TokenGate.mayBeKey << 4
    static let mayStartAuthorityPair: UInt8 = TokenGate.mayStartPair << 4

    /// Looks up token `index`, with `marks` found by the marker: as a whole token, as the
    /// start of a pair, as a token a prefix key starts or a suffix key ends, and as a token or pair
    /// start of the authority, as the group's keys require. (Many infix keys are looked up for the
    /// whole subject at once; see ``collectInfixes(in:_:into:)``.)
    @inline(__always)
    private func collect(
        at index: Int, marks: UInt8, _ bytes: Span<UInt8>, authority: Range<Int>, _ tokens: inout TokenHashes,
        into candidates: inout CandidateList
    ) {
        let token = tokens[index]
        if marks & (Self.mayBeAuthorityKey | Self.mayStartAuthorityPair) != 0 {
            collectInAuthority(at: index, marks: marks, bytes, authority: authority, &tokens, into: &candidates)
        }
        if marks & TokenGate.mayBeKey != 0 {
            table.collect(
                token.hash, before: bytes.byteOrZero(at: Int(token.start) &- 1),
                after: bytes.byteOrZero(at: Int(token.end)),
                confirmedBy: &tokens, into: &candidates, isGated: true)
        }
        if marks & TokenGate.mayStartPair != 0, index &+ 1 < tokens.count {
            let next = tokens[index &+ 1]
            table.collect(IndexKey.pairHash(token.hash, next.hash), confirmedBy: &tokens, into: &candidates)
            // A default port (`:80`, `:443`, `:21`) is dropped from the normalized URL, which makes
            // the tokens around it neighbours there.
            // (The byte before the port first: it is rarely a colon, and reading the hashes costs a
            // check that they are made.)
            if index &+ 2 < tokens.count, bytes[Int(next.start) &- 1] == UInt8(ascii: ":"),
                Self.defaultPortHashes.contains(next.hash)
            {
                table.collect(
                    IndexKey.pairHash(token.hash, tokens[index &+ 2].hash), confirmedBy: &tokens, into: &candidates)
            }
        }
        guard marks & (Self.mayHavePrefix | Self.mayHaveSuffix) != 0 else { return }
        collectAffixes(
            bytes, Int(token.start), Int(token.end), prefixes: marks & Self.mayHavePrefix != 0,
            suffixes: marks & Self.mayHaveSuffix != 0, &tokens, into: &candidates)
    }

    /// Looks up token `index` of the authority (see ``authority(in:)``) in the authority table, as a
    /// whole token and as the start of a pair with the next token when that one is in the authority
    /// too, as `marks` allow.
    ///
    /// The authority is where a match of the host opening (see ``PatternNode/authority``) can find
    /// its host: a host rule's tokens are not looked up for each token of a long path or query.
    private func collectInAuthority(
        at index: Int, marks: UInt8, _ bytes: Span<UInt8>, authority: Range<Int>, _ tokens: inout TokenHashes,
        into candidates: inout CandidateList
    ) {
        let token = tokens[index]
        if marks & Self.mayBeAuthorityKey != 0 {
            authorityTable.collect(
                token.hash, before: bytes.byteOrZero(at: Int(token.start) &- 1),
                after: bytes.byteOrZero(at: Int(token.end)), confirmedBy: &tokens, into: &candidates, isGated: true)
        }
        if marks & Self.mayStartAuthorityPair != 0, index &+ 1 < tokens.count {
            let next = tokens[index &+ 1]
            guard authority.contains(Int(next.start)) else { return }
            authorityTable.collect(IndexKey.pairHash(token.hash, next.hash), confirmedBy: &tokens, into: &candidates)
        }
    }

    /// The bytes of the subject's authority, where its tokens are looked up in the authority
    /// table: after `^[a-z][a-z0-9+.-]*:/+` (either case), up to the first `/`, `?` or `#`. A
    /// subject that does not start that way has none (an empty range).
    ///
    /// The raw URL's authority holds the normalized URL's (normalizing only lower-cases it and
    /// drops a default port). A non-ASCII byte where the scheme would be makes the whole subject
    /// count, which is never wrong.
    static func authority(in bytes: Span<UInt8>) -> Range<Int> {
        guard let (start, isBounded) = authorityStart(in: bytes) else { return 0..<0 }
        return start..<(isBounded ? bytes.authorityEnd(from: start) : bytes.count)
    }

    /// Where the authority starts (after `scheme:` and its slashes), and whether it ends at the
    /// first `/`, `?` or `#` (false: the whole subject counts); nil when there is none.
    static func authorityStart(in bytes: Span<UInt8>) -> (Int, isBounded: Bool)? {
        let slash = UInt8(ascii: "/")
        var index = 0
        if let knownScheme = knownSchemeLength(bytes) {
            index = knownScheme
        } else {
            while index < bytes.count, Self.isSchemeByte(bytes[index], first: index == 0) { index += 1 }
            guard index > 0, index + 1 < bytes.count, bytes[index] == UInt8(ascii: ":"), bytes[index + 1] == slash
            else {
                return index < bytes.count && bytes[index] >= 0x80 ? (0, false) : nil
            }
            index += 2
        }
        while index < bytes.count, bytes[index] == slash { index += 1 }
        return (index, true)
    }

    /// The length of `https://` or `http://` (either case) when the subject starts with one, read
    /// with one load: setting bit 5 of a byte gives a lower-case letter only for that letter in
    /// either case, and `:` and `/` have it set already.
    @inline(__always)
    private static func knownSchemeLength(_ bytes: Span<UInt8>) -> Int? {
        guard bytes.count >= 8 else { return nil }
        let word = bytes.word64(at: 0)
        // Bit 5 is set in the letters' bytes only: set in a control byte (0x1A), it would make `:`.
        if word | 0x0000_0020_2020_2020 == Self.httpsSlashes { return 8 }
        if (word | 0x2020_2020) & 0x00FF_FFFF_FFFF_FFFF == Self.httpSlashes { return 7 }
        return nil
    }

    /// `https://` and `http://` as little-endian words (the first byte lowest): h t t p s : / /
    /// is 68 74 74 70 73 3A 2F 2F.
    private static let httpsSlashes: UInt64 = 0x2F2F_3A73_7074_7468
    private static let httpSlashes: UInt64 = 0x002F_2F3A_7074_7468

    @inline(__always)
    private static func isSchemeByte(_ byte: UInt8, first: Bool) -> Bool {
        let letter = byte | 0x20
        if letter >= UInt8(ascii: "a"), letter <= UInt8(ascii: "z") { return true }
        if first { return false }
        return (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "+")
            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
    }

    private func collectAffixes(
        _ bytes: Span<UInt8>, _ start: Int, _ end: Int, prefixes: Bool, suffixes: Bool,
        _ tokens: inout TokenHashes, into candidates: inout CandidateList
    ) {
        let length = end - start
        let affixLength = min(length, IndexKey.maximumAffixLength)
        if prefixes {
            // Only the lengths of prefix keys that start with the token's first two bytes.
            let lengths = prefixGate.lengths(
                Self.loweredInToken(bytes[start]), then: length > 1 ? Self.loweredInToken(bytes[start + 1]) : 0)
            var state = IndexKey.hashStart
            for offset in 0..<min(affixLength, 8 - lengths.leadingZeroBitCount) {
                state = IndexKey.hashStep(state, Self.loweredInToken(bytes[start + offset]))
                if lengths & (1 &<< UInt8(truncatingIfNeeded: offset)) != 0 {
                    table.collect(IndexKey.hashFinish(state, .tokenPrefix), confirmedBy: &tokens, into: &candidates)
                }
            }
        }
        if suffixes {
            let lengths = suffixGate.lengths(
                Self.loweredInToken(bytes[end - 1]), then: length > 1 ? Self.loweredInToken(bytes[end - 2]) : 0)
            // Suffix keys are hashed last byte first (see IndexKey.hashValue64).
            var state = IndexKey.hashStart
            for offset in 0..<min(affixLength, 8 - lengths.leadingZeroBitCount) {
                state = IndexKey.hashStep(state, Self.loweredInToken(bytes[end - 1 - offset]))
                if lengths & (1 &<< UInt8(truncatingIfNeeded: offset)) != 0 {
                    table.collect(IndexKey.hashFinish(state, .tokenSuffix), confirmedBy: &tokens, into: &candidates)
                }
            }
        }
    }

    /// Looks up the infix keys that start at each place of the subject where the first two bytes
    /// of one stand, as far as the token there runs (an infix key is letters and digits only, so
    /// wherever it occurs it lies inside a token). The places are found 64 at a time by the C
    /// kernel `literal_pair_starts`, with no branch per byte: most bytes start no infix key's pair,
    /// and a loop that asked the gate about every byte of every token spent most of its time on
    /// them.
    private func collectInfixes(
        in bytes: Span<UInt8>, _ tokens: inout TokenHashes, into candidates: inout CandidateList
    ) {
        let infixPairs = self.infixPairs.words
        let pairs = infixPairs.span
        var block = 0
        while block < bytes.count &- 1 {
            var starts = bytes.pairStarts(from: block, in: pairs)
            while starts != 0 {
                collectInfixes(at: block &+ starts.trailingZeroBitCount, bytes, &tokens, into: &candidates)
                starts &= starts &- 1
            }
            block &+= 64
        }
        // The last byte starts no pair, and no key a match needs: an infix key stands inside a
        // token, with a byte of it after its last.
    }

    /// Looks up the infix keys that start at `offset` and end inside its token.
    @inline(__always)
    private func collectInfixes(
        at offset: Int, _ bytes: Span<UInt8>, _ tokens: inout TokenHashes, into candidates: inout CandidateList
    ) {
        guard Self.isTokenByte(bytes[offset]) else { return }
        let next = offset &+ 1 < bytes.count && Self.isTokenByte(bytes[offset &+ 1]) ? bytes[offset &+ 1] : 0
        let lengths = infixGate.lengths(
            Self.loweredInToken(bytes[offset]), then: next == 0 ? 0 : Self.loweredInToken(next))
        guard lengths != 0 else { return }
        var state = IndexKey.hashStart
        for infixOffset in 0..<(8 &- lengths.leadingZeroBitCount) {
            let position = offset &+ infixOffset
            guard position < bytes.count, Self.isTokenByte(bytes[position]) else { return }
            state = IndexKey.hashStep(state, Self.loweredInToken(bytes[position]))
            if lengths & (1 &<< UInt8(truncatingIfNeeded: infixOffset)) != 0 {
                table.collect(IndexKey.hashFinish(state, .infix), confirmedBy: &tokens, into: &candidates)
            }
        }
    }

    /// Whether `byte` is an ASCII letter or digit: a byte of a token.
    @inline(__always)
    static func isTokenByte(_ byte: UInt8) -> Bool {
        (byte | 0x20) &- UInt8(ascii: "a") < 26 || byte &- UInt8(ascii: "0") < 10
    }

    /// Looks for each of a few infix keys anywhere in the subject. An infix key is letters and
    /// digits only, so wherever it occurs it lies inside a token: the same keys are found as by
    /// checking each position of each token.
    ///
    /// The positions where the first two bytes of a key not found yet stand are found by a C
    /// kernel (`index_next_pair_start`), sixteen at a time with SSE2; only those positions are
    /// compared byte by byte. (Testing the first byte alone let through most words of a query
    /// full of digits, for keys such as `0x5bf`.) A search in Swift, sixteen positions a call,
    /// spent about 70 instructions on each sixteen bytes, a tenth of a decision with the policy
    /// mix's five infix keys.
    private func collect(
        _ keys: FewKeys, in bytes: Span<UInt8>, _ tokens: inout TokenHashes,
        into candidates: inout CandidateList
    ) {
        guard !bytes.isEmpty else { return }
        var found: UInt16 = 0
        var active = keys.activePairs(found: found)
        var index = 0
        while let position = keys.nextPairStart(in: bytes, from: index, active: active) {
            guard find(keys, at: position, in: bytes, found: &found, &tokens, into: &candidates) else { return }
            active = keys.activePairs(found: found)
            index = position + 1
        }
        // The last byte can only start a key of one byte.
        _ = find(keys, at: bytes.count - 1, in: bytes, found: &found, &tokens, into: &candidates)
    }

    /// Collects the rules of each key not in `found` that occurs at `index`, adding it to `found`;
    /// false once every key is found.
    @inline(__always)
    private func find(
        _ keys: FewKeys, at index: Int, in bytes: Span<UInt8>, found: inout UInt16,
        _ tokens: inout TokenHashes, into candidates: inout CandidateList
    ) -> Bool {
        var startingHere = keys.byFirstByte[Int(Self.lowered(bytes[index]))] & ~found
        while startingHere != 0 {
            let number = startingHere.trailingZeroBitCount
            startingHere &= startingHere - 1
            let (text, length) = (keys.texts[number], keys.lengths[number])
            guard index + length <= bytes.count else { continue }
            if index + 8 <= bytes.count {
                // All of the key's bytes at once (a key has at most eight).
                let mask: UInt64 = length >= 8 ? .max : (1 &<< UInt64(truncatingIfNeeded: 8 &* length)) &- 1
                guard (Self.lowered(bytes.word64(at: index)) ^ text) & mask == 0 else { continue }
            } else {
                var offset = 1
                while offset < length,
                    Self.lowered(bytes[index + offset]) == UInt8(truncatingIfNeeded: text >> (8 * offset))
                {
                    offset += 1
                }
                guard offset == length else { continue }
            }
            found |= 1 << UInt16(number)
            table.collect(keys.hashes[number], confirmedBy: &tokens, into: &candidates)
            if found == keys.everyKey { return false }
        }
        return true
    }

    /// The token hashes of the ports URL normalization drops.
    private static let defaultPortHashes = ["80", "443", "21"].map {
        IndexKey(kind: .token, text: Array($0.utf8)).hashValue64
    }

    /// A byte of a token lower-cased: every byte of a token is an ASCII letter or digit, and
    /// setting bit 5 lower-cases a letter and leaves a digit as it is.
    @inline(__always)
    static func loweredInToken(_ byte: UInt8) -> UInt8 {
        byte | 0x20
    }

    @inline(__always)
    static func lowered(_ byte: UInt8) -> UInt8 {
        (byte &- UInt8(ascii: "A") < 26) ? byte | 0x20 : byte
    }

    /// Each byte of `word` lower-cased, as `lowered(_:)` does one byte: bit 7 of a byte of the
    /// masks below says whether it is at least `A` (its low seven bits plus 0x3F reach 0x80), more
    /// than `Z` (plus 0x25), or 0x80 or more (its own bit 7), and bit 5 is set where it is a capital.
    @inline(__always)
    static func lowered(_ word: UInt64) -> UInt64 {
        let low = word & 0x7F7F_7F7F_7F7F_7F7F
        let capitals = (low &+ 0x3F3F_3F3F_3F3F_3F3F) & ~(low &+ 0x2525_2525_2525_2525) & ~word
        return word | (capitals & 0x8080_8080_8080_8080) &>> 2
    }
}
