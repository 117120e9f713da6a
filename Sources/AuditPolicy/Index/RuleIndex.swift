import AuditLocking
import AuditRegex
internal import CByteClasses
import Dispatch

/// Files a policy's rules under the tokens a request must carry for them to match, so that an
/// evaluation runs PCRE2 only for the few rules that can match.
///
/// Built once when a policy loads; read-only afterwards, so any number of evaluations may use it
/// at once without locks. The index never decides anything: it only skips rules that cannot
/// match, and the rules it keeps are matched by PCRE2 exactly as before.
struct RuleIndex: Sendable {
    /// The rules of one request field.
    final class FieldGroup: Sendable {
        let field: RequestField
        /// Keys looked up among every token of the subject.
        let table: KeyTable
        /// Keys looked up only among the tokens of the URL's authority (see
        /// ``IndexKey/isInAuthority``): a host rule's tokens are not looked up for each token of a
        /// long path or query.
        let authorityTable: KeyTable
        let hasAuthorityKeys: Bool
        /// The first tokens of the authority table's pair keys.
        let authorityPairStarts: TokenHashFilter
        /// Rules with no usable requirement: matched for every request.
        let alwaysRun: [Int32]
        /// Every rule of the field, for subjects the index cannot reason about.
        let all: [Int32]
        /// Whether some key is a token start (end, inside); their gates say which lengths.
        let hasPrefixKeys: Bool
        let hasSuffixKeys: Bool
        let hasInfixKeys: Bool
        let hasTokenKeys: Bool
        let hasPairKeys: Bool
        /// Whether tokens are read against ``tokenGate`` (there are token or pair keys), and each
        /// position of each token against ``infixGate`` (many infix keys; a few are searched for in
        /// the whole subject instead, see ``fewInfixKeys``).
        let checksTokenGate: Bool
        let checksInfixGate: Bool
        /// Whether a token may be a whole-token key of `table`, and whether it may start a pair
        /// key: most tokens are neither, and one read says so for both.
        let tokenGate: TokenGate
        /// Which (first, second) byte pairs of a token some prefix key begins with, and the
        /// lengths of those keys; likewise for the last two bytes and suffix keys, and for each
        /// position and infix keys. The lengths say which keys to look up for a token that passed
        /// `prefixStarts` (`suffixEnds`); with many infix keys, `infixGate` is also their gate.
        let prefixGate: BytePairSet
        let suffixGate: BytePairSet
        /// Whether a token may start with a prefix key, or end with a suffix key, judged by its
        /// first (last) four bytes for keys of four bytes or more: the first two bytes of such keys
        /// (`me` of `metrics`, `co` of `collect`) start too many tokens.
        let prefixStarts: AffixGate
        let suffixEnds: AffixGate
        let infixGate: BytePairSet
        /// The infix keys when they are few: the subject is searched for each at once, rather than
        /// every position of every token being checked against the gate, which costs more when the
        /// keys are few.
        let fewInfixKeys: FewKeys?
        /// Number of rules filed per kind of key (a rule with several alternatives counts once,
        /// under the kind of its first key).
        let rulesByKind: [IndexKey.Kind: Int]
        /// Number of rules all of whose keys are in the authority table.
        let rulesInAuthority: Int
        /// The keys shared by the most rules, most first (at most ten).
        let busiestKeys: [(key: String, rules: Int)]

        init(
            field: RequestField, table: KeyTable, authorityTable: KeyTable, authorityPairStarts: TokenHashFilter,
            alwaysRun: [Int32], all: [Int32], hasPrefixKeys: Bool,
            hasSuffixKeys: Bool, hasInfixKeys: Bool, hasTokenKeys: Bool, hasPairKeys: Bool,
            tokenGate: TokenGate, prefixGate: BytePairSet, prefixStarts: AffixGate, suffixEnds: AffixGate,
            suffixGate: BytePairSet, infixGate: BytePairSet, infixKeys: Set<[UInt8]>, rulesByKind: [IndexKey.Kind: Int],
            rulesInAuthority: Int, busiestKeys: [(key: String, rules: Int)]
        ) {
            self.authorityTable = authorityTable
            self.hasAuthorityKeys = authorityTable.keyCount > 0
            self.authorityPairStarts = authorityPairStarts
            self.rulesInAuthority = rulesInAuthority
            self.prefixGate = prefixGate
            self.prefixStarts = prefixStarts
            self.suffixEnds = suffixEnds
            self.suffixGate = suffixGate
            self.infixGate = infixGate
            self.fewInfixKeys = FewKeys(infixKeys)
            self.busiestKeys = busiestKeys
            self.field = field
            self.table = table
            self.alwaysRun = alwaysRun
            self.all = all
            self.hasPrefixKeys = hasPrefixKeys
            self.hasSuffixKeys = hasSuffixKeys
            self.hasInfixKeys = hasInfixKeys
            self.hasTokenKeys = hasTokenKeys
            self.hasPairKeys = hasPairKeys
            self.checksTokenGate = hasTokenKeys || hasPairKeys
            self.checksInfixGate = hasInfixKeys && fewInfixKeys == nil
            self.tokenGate = tokenGate
            self.rulesByKind = rulesByKind
        }
    }

    let groups: [FieldGroup]

    init(rules: [Rule]) {
        var order: [RequestField] = []
        var members: [RequestField: [Int32]] = [:]
        for (index, rule) in rules.enumerated() {
            if members[rule.field] == nil { order.append(rule.field) }
            members[rule.field, default: []].append(Int32(index))
        }
        groups = order.map { field in
            Self.group(field: field, members: members[field] ?? [], rules: rules)
        }
    }

    private static func group(field: RequestField, members: [Int32], rules: [Rule]) -> FieldGroup {
        var entries: [KeyTable.Entry] = []
        var authorityEntries: [KeyTable.Entry] = []
        var authorityPairStarts = TokenHashFilter()
        var rulesInAuthority = 0
        var alwaysRun: [Int32] = []
        var hasPrefixKeys = false
        var hasSuffixKeys = false
        var hasInfixKeys = false
        var hasTokenKeys = false
        var hasPairKeys = false
        var tokenKeys: [UInt64] = []
        var pairStarts: [UInt64] = []
        var prefixGate = BytePairSet()
        var suffixGate = BytePairSet()
        var prefixStarts = AffixGate.Builder()
        var suffixEnds = AffixGate.Builder()
        var infixGate = BytePairSet()
        var infixKeys: Set<[UInt8]> = []
        var rulesByKind: [IndexKey.Kind: Int] = [:]
        var rulesByKey: [IndexKey: Int] = [:]
        for (member, filing) in zip(members, filings(of: members, rules: rules)) {
            guard let filing else {
                alwaysRun.append(member)
                continue
            }
            let keys = filing.requirement.keys
            let confirmations = filing.confirmations.map(\.hashValue64)
            rulesByKind[keys[0].kind, default: 0] += 1
            if keys.allSatisfy(\.isInAuthority) { rulesInAuthority += 1 }
            for key in keys {
                rulesByKey[key, default: 0] += 1
                let isSingle = keys.count == 1
                let entry = KeyTable.Entry(
                    hash: key.hashValue64, rule: member, before: key.before, after: key.after,
                    confirmation: isSingle && confirmations.count > 0 ? confirmations[0] : 0,
                    secondConfirmation: isSingle && confirmations.count > 1 ? confirmations[1] : 0)
                if key.isInAuthority {
                    authorityEntries.append(entry)
                    if key.kind == .tokenPair { authorityPairStarts.insert(key.pairTokens.0.hashValue64) }
                    continue
                }
                entries.append(entry)
                switch key.kind {
                case .token:
                    hasTokenKeys = true
                    tokenKeys.append(entry.hash)
                case .tokenPair:
                    hasPairKeys = true
                    pairStarts.append(key.pairTokens.0.hashValue64)
                case .tokenPrefix:
                    hasPrefixKeys = true
                    prefixStarts.insert(key.text)
                    prefixGate.insert(
                        key.text[0], then: key.text.count > 1 ? key.text[1] : nil, length: key.text.count)
                case .tokenSuffix:
                    hasSuffixKeys = true
                    let last = key.text.count - 1
                    suffixEnds.insert(key.text.reversed())
                    suffixGate.insert(key.text[last], then: last > 0 ? key.text[last - 1] : nil, length: key.text.count)
                case .infix:
                    hasInfixKeys = true
                    infixKeys.insert(key.text)
                    infixGate.insert(
                        key.text[0], then: key.text.count > 1 ? key.text[1] : nil, length: key.text.count)
                }
            }
        }
        return FieldGroup(
            field: field, table: KeyTable(entries: entries), authorityTable: KeyTable(entries: authorityEntries),
            authorityPairStarts: authorityPairStarts, alwaysRun: alwaysRun, all: members,
            hasPrefixKeys: hasPrefixKeys, hasSuffixKeys: hasSuffixKeys, hasInfixKeys: hasInfixKeys,
            hasTokenKeys: hasTokenKeys, hasPairKeys: hasPairKeys,
            tokenGate: TokenGate(keys: tokenKeys, pairStarts: pairStarts), prefixGate: prefixGate,
            prefixStarts: prefixStarts.gate, suffixEnds: suffixEnds.gate,
            suffixGate: suffixGate, infixGate: infixGate, infixKeys: infixKeys,
            rulesByKind: rulesByKind, rulesInAuthority: rulesInAuthority,
            busiestKeys: busiest(rulesByKey))
    }

    /// Each member's filing, in order.
    ///
    /// A key shared by many rules makes all of them run whenever it turns up, so a key is priced up
    /// by how many rules already use it. Large groups are cut into a fixed number of slices filed
    /// at once on the processor's cores, each pricing keys by the rules of its own slice: the
    /// filings are the same on every machine.
    private static func filings(of members: [Int32], rules: [Rule]) -> [RequirementAnalysis.Filing?] {
        @Sendable func file(_ slice: ArraySlice<Int32>) -> [RequirementAnalysis.Filing?] {
            var rulesByKey: [IndexKey: Int] = [:]
            return slice.map { member in
                let pattern = rules[Int(member)].pattern
                let filing = RequirementAnalysis.filing(
                    of: pattern.source, caseInsensitive: pattern.isCaseInsensitive
                ) { key in key.cost * (1 + Double(rulesByKey[key, default: 0])) }
                for key in filing?.requirement.keys ?? [] { rulesByKey[key, default: 0] += 1 }
                return filing
            }
        }
        let sliceCount = members.count >= 4_096 ? 8 : 1
        guard sliceCount > 1 else { return file(members[...]) }
        let slices = Locked([[RequirementAnalysis.Filing?]](repeating: [], count: sliceCount))
        DispatchQueue.concurrentPerform(iterations: sliceCount) { slice in
            let range = (members.count * slice / sliceCount)..<(members.count * (slice + 1) / sliceCount)
            let filed = file(members[range])
            slices.withLock { $0[slice] = filed }
        }
        return slices.withLock { $0.flatMap { $0 } }
    }

    /// The ten keys shared by the most rules, most first, ties by name. Only keys tied with the
    /// tenth count are named and compared by name: naming 100,000 keys would cost more than the
    /// rest of the index.
    private static func busiest(_ rulesByKey: [IndexKey: Int]) -> [(key: String, rules: Int)] {
        let counts = rulesByKey.values.sorted(by: >)
        guard let tenth = counts.prefix(10).last else { return [] }
        return rulesByKey.filter { $0.value >= tenth }.map { (key: $0.key.description, rules: $0.value) }
            .sorted { ($0.rules, $1.key) > ($1.rules, $0.key) }.prefix(10).map { $0 }
    }

    /// Adds to `candidates` the index of every rule that may match, ascending and without repeats.
    func collectCandidates(
        for request: AuditRequest, subjects: inout RequestSubjects, into candidates: inout CandidateList
    ) {
        for group in groups {
            // An ASCII URL is scanned as sent (see collectCandidates(forURLOf:into:)).
            if group.field == .url,
                request.url.utf8.withContiguousStorageIfAvailable({
                    group.collect(in: $0, into: &candidates, requiringASCII: true)
                }) == true
            {
                continue
            }
            guard let subject = subjects.subject(for: group.field, of: request) else { continue }
            subject.withBytes { _ = group.collect(in: $0, into: &candidates) }
        }
        candidates.sortWithoutRepeats()
    }

    /// ``collectCandidates(for:subjects:into:)`` without building any subject, for the common case of
    /// a policy whose rules all read the URL and a request whose URL is ASCII; in every other case,
    /// returns false having added nothing.
    ///
    /// An ASCII URL's tokens include every token of its normalized form (normalizing only
    /// lower-cases scheme and host and drops a default port and the fragment, each set off by
    /// separators), so its raw bytes can be scanned without building the normalized copy: more
    /// candidates at worst, never fewer. PCRE2 still matches the normalized URL.
    func collectCandidates(forURLOf request: AuditRequest, into candidates: inout CandidateList) -> Bool {
        guard groups.count == 1, groups[0].field == .url else { return false }
        let group = groups[0]
        let isASCII =
            request.url.utf8.withContiguousStorageIfAvailable { bytes in
                group.collect(in: bytes, into: &candidates, requiringASCII: true)
            } ?? false
        guard isASCII else { return false }
        candidates.sortWithoutRepeats()
        return true
    }
}

extension RuleIndex.FieldGroup {
    /// Appends the rules of this group that a subject made of `bytes` may match, and returns true;
    /// with `requiringASCII`, returns false having appended nothing if some byte is 0x80 or more
    /// (the raw bytes of such a URL do not stand for its normalized form; see
    /// ``RuleIndex/collectCandidates(forURLOf:into:)``). The check is part of the scan for tokens.
    @discardableResult
    func collect(
        in bytes: UnsafeBufferPointer<UInt8>, into candidates: inout CandidateList, requiringASCII: Bool = false
    )
        -> Bool
    {
        // First every token's hash (rules filed with a second token are checked against these),
        // then the lookups.
        TokenHashes.withTokens(ofSubjectLength: bytes.count) { tokens in
            let scan = tokens.append(tokensOf: bytes)
            if requiringASCII, !scan.isASCII { return false }
            if !alwaysRun.isEmpty { candidates.append(contentsOf: alwaysRun) }
            guard scan.isTokenizable else {
                candidates.append(contentsOf: all)
                return true
            }
            collect(in: bytes, tokens: &tokens, into: &candidates)
            return true
        }
    }

    /// Looks up the tokens of the subject that pass some gate (with many infix keys, every token).
    ///
    /// Which tokens pass is found first, for all of them at once, by a C kernel
    /// (`index_mark_tokens`) that reads the token gate and the byte-pair sets of the start and
    /// end keys with no branch per token; only the few that pass are looked at again. A loop that
    /// asked each token every question in turn spent more on branches and on moving its state
    /// between registers and the stack than on the questions.
    private func collect(
        in bytes: UnsafeBufferPointer<UInt8>, tokens: inout TokenHashes, into candidates: inout CandidateList
    ) {
        if hasAuthorityKeys { collectInAuthority(bytes, &tokens, into: &candidates) }
        if let fewInfixKeys { collect(fewInfixKeys, in: bytes, &tokens, into: &candidates) }
        let all = tokens.tokens
        guard !checksInfixGate, all.count < Self.markableTokens else {
            for index in all.indices {
                let token = all[index]
                let (start, end) = (Int(token.start), Int(token.end))
                let marks =
                    (checksTokenGate ? tokenGate.flags(token.hash) : 0)
                    | (hasPrefixKeys && prefixGate.containsPair(startingToken: bytes, start, end, backwards: false)
                        ? Self.hasPrefixPair : 0)
                    | (hasSuffixKeys && suffixGate.containsPair(startingToken: bytes, start, end, backwards: true)
                        ? Self.hasSuffixPair : 0)
                collect(at: index, marks: marks, of: all, bytes, &tokens, into: &candidates)
            }
            return
        }
        withUnsafeTemporaryAllocation(of: Int32.self, capacity: all.count) { marked in
            for entry in marked.prefix(markTokens(all, bytes, into: marked)) {
                collect(
                    at: Int(entry &>> 4), marks: UInt8(truncatingIfNeeded: entry & 15), of: all, bytes, &tokens,
                    into: &candidates)
            }
        }
    }

    /// What the marker found of a token, besides the token gate's ``TokenGate/mayBeKey`` and
    /// ``TokenGate/mayStartPair``: its first (last) two bytes are a pair some prefix (suffix) key
    /// starts (ends) with.
    static let hasPrefixPair: UInt8 = 4
    static let hasSuffixPair: UInt8 = 8
    /// The marker keeps a token's index in the 27 bits of an entry above its marks.
    private static let markableTokens = 1 << 27

    /// Writes to `marked` the tokens of `all` that pass the token gate or the byte-pair sets of the
    /// start and end keys, as the group has them, and returns how many (see ``markTokens(_:_:gate:readsGate:prefixes:readsPrefixes:suffixes:readsSuffixes:into:)``).
    private func markTokens(
        _ all: UnsafeBufferPointer<TokenHashes.Token>, _ bytes: UnsafeBufferPointer<UInt8>,
        into marked: UnsafeMutableBufferPointer<Int32>
    ) -> Int {
        Self.markTokens(
            all, bytes, gate: tokenGate, readsGate: checksTokenGate, prefixes: prefixGate,
            readsPrefixes: hasPrefixKeys, suffixes: suffixGate, readsSuffixes: hasSuffixKeys, into: marked)
    }

    /// Writes to `marked` the tokens of `all` (the tokens of `bytes`, fewer than 2^27) for which
    /// `gate` has a flag set, whose first two bytes are in `prefixes`, or whose last two are in
    /// `suffixes` (see ``BytePairSet/containsPair(startingToken:_:_:backwards:)``), in order, and
    /// returns how many; each only when it `reads` it. An entry is the token's index times 16, plus
    /// the gate's flags, plus ``hasPrefixPair`` and ``hasSuffixPair`` when they apply.
    static func markTokens(
        _ all: UnsafeBufferPointer<TokenHashes.Token>, _ bytes: UnsafeBufferPointer<UInt8>, gate: TokenGate,
        readsGate: Bool, prefixes: BytePairSet, readsPrefixes: Bool, suffixes: BytePairSet, readsSuffixes: Bool,
        into marked: UnsafeMutableBufferPointer<Int32>
    ) -> Int {
        gate.withWords { gateWords, gateMask in
            prefixes.withWords { prefixPairs in
                suffixes.withWords { suffixPairs in
                    index_mark_tokens(
                        all.baseAddress, all.count, bytes.baseAddress, readsGate ? gateWords : nil, gateMask,
                        readsPrefixes ? prefixPairs : nil, readsSuffixes ? suffixPairs : nil, marked.baseAddress)
                }
            }
        }
    }

    /// Looks up token `index` of `all`, with `marks` found by the marker: as a whole token, as the
    /// start of a pair, as a token a prefix key starts or a suffix key ends, and at each position
    /// for infix keys, as the group's keys require.
    @inline(__always)
    private func collect(
        at index: Int, marks: UInt8, of all: UnsafeBufferPointer<TokenHashes.Token>,
        _ bytes: UnsafeBufferPointer<UInt8>, _ tokens: inout TokenHashes, into candidates: inout CandidateList
    ) {
        let token = all[index]
        if marks & TokenGate.mayBeKey != 0 {
            table.collect(
                token.hash, before: Self.byte(bytes, Int(token.start) &- 1), after: Self.byte(bytes, Int(token.end)),
                confirmedBy: &tokens, into: &candidates, isGated: true)
        }
        if marks & TokenGate.mayStartPair != 0, index &+ 1 < all.count {
            let next = all[index &+ 1]
            table.collect(IndexKey.pairHash(token.hash, next.hash), confirmedBy: &tokens, into: &candidates)
            // A default port (`:80`, `:443`, `:21`) is dropped from the normalized URL, which makes
            // the tokens around it neighbours there.
            // (The byte before the port first: it is rarely a colon, and reading the hashes costs a
            // check that they are made.)
            if index &+ 2 < all.count, bytes[Int(next.start) &- 1] == UInt8(ascii: ":"),
                Self.defaultPortHashes.contains(next.hash)
            {
                table.collect(
                    IndexKey.pairHash(token.hash, all[index &+ 2].hash), confirmedBy: &tokens, into: &candidates)
            }
        }
        guard marks & (Self.hasPrefixPair | Self.hasSuffixPair) != 0 || checksInfixGate else { return }
        let start = Int(token.start)
        let end = Int(token.end)
        // The byte-pair sets of all start (end) keys turned most tokens away; the affix gates judge
        // the rest more closely.
        let mayHavePrefix =
            marks & Self.hasPrefixPair != 0 && prefixStarts.mayMatch(bytes, start, end, backwards: false)
        let mayHaveSuffix = marks & Self.hasSuffixPair != 0 && suffixEnds.mayMatch(bytes, start, end, backwards: true)
        guard checksInfixGate || mayHavePrefix || mayHaveSuffix else { return }
        collectAffixes(bytes, start, end, prefixes: mayHavePrefix, suffixes: mayHaveSuffix, &tokens, into: &candidates)
    }

    /// Looks up the tokens of the subject's authority, and each two neighbours there, in the
    /// authority table.
    ///
    /// The authority is where a match of the host opening (see ``PatternNode/authority``) can find
    /// its host: after `^[a-z][a-z0-9+.-]*:/+` (either case), up to the first `/`, `?` or `#`. A
    /// subject that does not start that way has none. Its end is found among the separators
    /// between tokens (a token never holds `/`, `?` or `#`), which are few in a host name.
    ///
    /// The raw URL's authority holds the normalized URL's (normalizing only lower-cases it and
    /// drops a default port). A non-ASCII byte where the scheme would be makes the whole subject
    /// count, which is never wrong.
    private func collectInAuthority(
        _ bytes: UnsafeBufferPointer<UInt8>, _ tokens: inout TokenHashes, into candidates: inout CandidateList
    ) {
        guard let (start, isBounded) = Self.authorityStart(in: bytes) else { return }
        var separatorStart = start
        var previous: UInt64 = 0
        for token in tokens.tokens where token.start >= start {
            if isBounded {
                var hasEnded = false
                for index in separatorStart..<Int(token.start) where Self.endsAuthority(bytes[index]) {
                    hasEnded = true
                }
                if hasEnded { break }
            }
            authorityTable.collect(
                token.hash, before: Self.byte(bytes, Int(token.start) &- 1), after: Self.byte(bytes, Int(token.end)),
                confirmedBy: &tokens, into: &candidates)
            if previous != 0, authorityPairStarts.contains(previous) {
                authorityTable.collect(IndexKey.pairHash(previous, token.hash), confirmedBy: &tokens, into: &candidates)
            }
            previous = token.hash
            separatorStart = Int(token.end)
        }
    }

    /// Where the authority starts (after `scheme:` and its slashes), and whether it ends at the
    /// first `/`, `?` or `#` (false: the whole subject counts); nil when there is none.
    static func authorityStart(in bytes: UnsafeBufferPointer<UInt8>) -> (Int, isBounded: Bool)? {
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
    private static func knownSchemeLength(_ bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard bytes.count >= 8 else { return nil }
        let word = UInt64(littleEndian: UnsafeRawBufferPointer(bytes).loadUnaligned(as: UInt64.self))
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
    private static func endsAuthority(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#")
    }

    @inline(__always)
    private static func isSchemeByte(_ byte: UInt8, first: Bool) -> Bool {
        let letter = byte | 0x20
        if letter >= UInt8(ascii: "a"), letter <= UInt8(ascii: "z") { return true }
        if first { return false }
        return (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "+")
            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "-")
    }

    private func collectAffixes(
        _ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int, prefixes: Bool, suffixes: Bool,
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
        if checksInfixGate {
            for offset in start..<end {
                let lengths = infixGate.lengths(
                    Self.loweredInToken(bytes[offset]),
                    then: offset + 1 < end ? Self.loweredInToken(bytes[offset + 1]) : 0)
                guard lengths != 0 else { continue }
                var state = IndexKey.hashStart
                for infixOffset in 0..<min(end - offset, 8 - lengths.leadingZeroBitCount) {
                    state = IndexKey.hashStep(state, Self.loweredInToken(bytes[offset + infixOffset]))
                    if lengths & (1 &<< UInt8(truncatingIfNeeded: infixOffset)) != 0 {
                        table.collect(IndexKey.hashFinish(state, .infix), confirmedBy: &tokens, into: &candidates)
                    }
                }
            }
        }
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
        _ keys: FewKeys, in bytes: UnsafeBufferPointer<UInt8>, _ tokens: inout TokenHashes,
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
        _ keys: FewKeys, at index: Int, in bytes: UnsafeBufferPointer<UInt8>, found: inout UInt16,
        _ tokens: inout TokenHashes, into candidates: inout CandidateList
    ) -> Bool {
        var startingHere = keys.byFirstByte[Int(Self.lowered(bytes[index]))] & ~found
        while startingHere != 0 {
            let number = startingHere.trailingZeroBitCount
            startingHere &= startingHere - 1
            let (text, length) = (keys.texts[number], keys.lengths[number])
            guard index + length <= bytes.count else { continue }
            var offset = 1
            while offset < length,
                Self.lowered(bytes[index + offset]) == UInt8(truncatingIfNeeded: text >> (8 * offset))
            {
                offset += 1
            }
            guard offset == length else { continue }
            found |= 1 << UInt16(number)
            table.collect(keys.hashes[number], confirmedBy: &tokens, into: &candidates)
            if found == keys.everyKey { return false }
        }
        return true
    }

    /// A few infix keys, looked for in the subject as text.
    final class FewKeys: Sendable {
        static let maximumCount = 16
        /// Each key's bytes, first byte lowest (a key has at most eight).
        let texts: [UInt64]
        let lengths: [Int]
        let hashes: [UInt64]
        /// For each byte, the keys that start with it (bit `n`: key `n`).
        let byFirstByte: [UInt16]
        /// For each distinct first two bytes of the keys (a one-byte key has no second byte), the
        /// keys that start with them.
        let keysByPair: [UInt16]
        /// One bit per key.
        let everyKey: UInt16

        /// Nil for no keys, more than ``maximumCount``, or a key longer than eight bytes.
        init?(_ keys: Set<[UInt8]>) {
            guard !keys.isEmpty, keys.count <= Self.maximumCount, keys.allSatisfy({ (1...8).contains($0.count) })
            else { return nil }
            let sorted = keys.sorted { $0.lexicographicallyPrecedes($1) }
            texts = sorted.map { $0.reversed().reduce(0) { $0 << 8 | UInt64($1) } }
            lengths = sorted.map(\.count)
            hashes = sorted.map { IndexKey(kind: .infix, text: $0).hashValue64 }
            var byFirstByte = [UInt16](repeating: 0, count: 256)
            var byPair: [[UInt8]: UInt16] = [:]
            for (number, key) in sorted.enumerated() {
                byFirstByte[Int(key[0])] |= 1 << UInt16(number)
                byPair[Array(key.prefix(2)), default: 0] |= 1 << UInt16(number)
            }
            let pairs = byPair.sorted { $0.key.lexicographicallyPrecedes($1.key) }
            keysByPair = pairs.map(\.value)
            self.byFirstByte = byFirstByte
            everyKey = UInt16.max >> UInt16(16 - sorted.count)
            pairFirsts = pairs.map { $0.key[0] }
            pairSeconds = pairs.map { $0.key.count > 1 ? $0.key[1] : 0 }
            pairsWithoutSecond = pairs.indices.reduce(0) { $0 | (pairs[$1].key.count > 1 ? 0 : 1 << UInt32($1)) }
        }

        /// The first and second bytes of each pair of ``keysByPair``, for the search
        /// (`index_next_pair_start`).
        let pairFirsts: [UInt8]
        let pairSeconds: [UInt8]
        /// Bit `n`: pair `n` is a one-byte key's, with no second byte.
        let pairsWithoutSecond: UInt32

        /// The first position from `index` on, and before the last byte, where a pair of
        /// `active` (bit `n`: pair `n`) stands, its bytes' bit 5 set; nil when there is none. Bit
        /// 5 set lower-cases a capital letter and leaves lower-case letters and digits alone, so
        /// no position of a key in any case is missed; the bytes of a position found need
        /// comparing, as a few others pass (0x10 for `0`).
        @inline(__always)
        func nextPairStart(in bytes: UnsafeBufferPointer<UInt8>, from index: Int, active: UInt32) -> Int? {
            let position = pairFirsts.withUnsafeBufferPointer { firsts in
                pairSeconds.withUnsafeBufferPointer { seconds in
                    index_next_pair_start(
                        bytes.baseAddress, bytes.count, index, firsts.baseAddress, seconds.baseAddress, active,
                        pairsWithoutSecond)
                }
            }
            return position >= 0 ? position : nil
        }

        /// Bit `n`: pair `n` starts a key not in `found`.
        @inline(__always)
        func activePairs(found: UInt16) -> UInt32 {
            var active: UInt32 = 0
            for (pair, keys) in keysByPair.enumerated() where keys & ~found != 0 { active |= 1 << UInt32(pair) }
            return active
        }
    }

    /// The token hashes of the ports URL normalization drops.
    private static let defaultPortHashes = ["80", "443", "21"].map {
        IndexKey(kind: .token, text: Array($0.utf8)).hashValue64
    }

    /// The byte at `index`, or 0 outside the subject.
    @inline(__always)
    private static func byte(_ bytes: UnsafeBufferPointer<UInt8>, _ index: Int) -> UInt8 {
        index >= 0 && index < bytes.count ? bytes[index] : 0
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
}

/// A one-hash Bloom filter of token hashes in 4 KiB: no false "no", a few false "maybe".
struct TokenHashFilter: Sendable {
    private var words = [UInt64](repeating: 0, count: 512)

    mutating func insert(_ hash: UInt64) {
        let bit = Int(truncatingIfNeeded: hash >> 20) & 32_767
        words[bit >> 6] |= 1 << UInt64(bit & 63)
    }

    @inline(__always)
    func contains(_ hash: UInt64) -> Bool {
        let bit = Int(truncatingIfNeeded: hash >> 20) & 32_767
        return words.withUnsafeBufferPointer { $0[bit &>> 6] & (1 &<< UInt64(truncatingIfNeeded: bit)) != 0 }
    }
}

/// Two one-hash Bloom filters of token hashes in one array, two bits per slot: whether a token
/// may be a whole-token key, and whether it may start a pair key. About 16 slots per hash, between
/// 1 KiB and 512 KiB; one read answers both questions for a token that is neither, as most are.
struct TokenGate: Sendable {
    static let mayBeKey: UInt8 = 1
    static let mayStartPair: UInt8 = 2

    private let words: [UInt64]
    private let mask: Int

    init(keys: [UInt64], pairStarts: [UInt64]) {
        var slots = 4_096
        while slots < (keys.count + pairStarts.count) * 16, slots < 1 << 21 { slots *= 2 }
        var words = [UInt64](repeating: 0, count: slots / 32)
        for (hashes, flag) in [(keys, Self.mayBeKey), (pairStarts, Self.mayStartPair)] {
            for hash in hashes {
                let slot = Self.slot(hash, mask: slots - 1)
                words[slot >> 5] |= UInt64(flag) << UInt64(2 * (slot & 31))
            }
        }
        self.words = words
        mask = slots - 1
    }

    @inline(__always)
    private static func slot(_ hash: UInt64, mask: Int) -> Int {
        Int(truncatingIfNeeded: hash &>> 40) & mask
    }

    /// Calls `body` with the gate's words and slot mask, for the C kernel `index_mark_tokens`.
    func withWords<Result>(_ body: (UnsafePointer<UInt64>?, UInt64) -> Result) -> Result {
        words.withUnsafeBufferPointer { body($0.baseAddress, UInt64(mask)) }
    }

    /// ``mayBeKey`` and ``mayStartPair`` for a token with hash `hash`: never clear for a key or a
    /// pair start, now and then set for other tokens.
    @inline(__always)
    func flags(_ hash: UInt64) -> UInt8 {
        let slot = Self.slot(hash, mask: mask)
        let word = words.withUnsafeBufferPointer { $0[slot &>> 5] }
        return UInt8(truncatingIfNeeded: word &>> UInt64(truncatingIfNeeded: 2 &* (slot & 31))) & 3
    }
}

/// Whether a token may start with one of a set of keys (or, read backwards, end with one): keys
/// of one to three bytes are judged by the token's first two bytes, longer ones by its first
/// four, in a one-hash Bloom filter of about 16 bits per key (512 bits at least).
struct AffixGate: Sendable {
    /// Collects the keys of a gate.
    struct Builder {
        private var short = BytePairSet()
        private var quads: [UInt32] = []

        /// Adds a key, in the order the gate reads tokens (a suffix key last byte first).
        mutating func insert<Key: Collection<UInt8>>(_ key: Key) {
            let bytes = Array(key)
            guard bytes.count >= 4 else {
                short.insert(bytes[0], then: bytes.count > 1 ? bytes[1] : nil, length: bytes.count)
                return
            }
            quads.append(bytes.prefix(4).reversed().reduce(0) { $0 << 8 | UInt32($1) })
        }

        var gate: AffixGate { AffixGate(short: short, quads: quads) }
    }

    private let short: BytePairSet
    private let hasShortKeys: Bool
    private let words: [UInt64]
    private let shift: UInt32

    private init(short: BytePairSet, quads: [UInt32]) {
        self.short = short
        hasShortKeys = short.hasPairs
        var bitCount = 9
        while 1 << bitCount < quads.count * 16, bitCount < 20 { bitCount += 1 }
        shift = UInt32(32 - bitCount)
        var words = [UInt64](repeating: 0, count: (1 << bitCount) / 64)
        for quad in quads {
            let bit = Self.bit(quad, shift: shift)
            words[bit >> 6] |= 1 << UInt64(bit & 63)
        }
        self.words = words
    }

    @inline(__always)
    private static func bit(_ quad: UInt32, shift: UInt32) -> Int {
        Int(truncatingIfNeeded: (quad &* 0x9E37_79B1) &>> shift)
    }

    /// Whether the token `bytes[start..<end]` may start with a key (`backwards`: end with one);
    /// never false when it does.
    @inline(__always)
    func mayMatch(_ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int, backwards: Bool) -> Bool {
        let length = end &- start
        if length >= 4 {
            // Every byte of a token is a letter or digit: setting bit 5 lower-cases it. Read
            // backwards, the last byte comes first, as in the key.
            let raw = UnsafeRawBufferPointer(bytes)
            var quad = UInt32(
                littleEndian: raw.loadUnaligned(fromByteOffset: backwards ? end &- 4 : start, as: UInt32.self))
            if backwards { quad = quad.byteSwapped }
            let bit = Self.bit(quad | 0x2020_2020, shift: shift)
            if words.withUnsafeBufferPointer({ $0[bit &>> 6] & (1 &<< UInt64(truncatingIfNeeded: bit)) != 0 }) {
                return true
            }
        }
        guard hasShortKeys else { return false }
        let first = RuleIndex.FieldGroup.loweredInToken(bytes[backwards ? end &- 1 : start])
        let second = length > 1 ? RuleIndex.FieldGroup.loweredInToken(bytes[backwards ? end &- 2 : start &+ 1]) : 0
        return short.contains(first, then: second)
    }
}

/// A set of byte pairs (a byte, then the byte after it or 0 for none), each with the lengths (1 to
/// 8) of the keys that begin with it: 65,536 bits in 8 KiB, small enough to stay in the processor's
/// first-level cache, answer most questions; the lengths take a byte per pair (64 KiB), read only
/// for pairs in the set.
struct BytePairSet: Sendable {
    private var words = [UInt64](repeating: 0, count: 1_024)
    private var lengthMasks: [UInt8] = []

    /// Adds (`first`, `second`) for a key of `length` bytes; with `second` nil, `first` followed by
    /// anything or nothing.
    mutating func insert(_ first: UInt8, then second: UInt8?, length: Int) {
        guard let second else {
            for next in 0...255 { insert(first, then: UInt8(next), length: length) }
            return
        }
        let pair = Int(first) << 8 | Int(second)
        words[pair >> 6] |= 1 << UInt64(pair & 63)
        if lengthMasks.isEmpty { lengthMasks = [UInt8](repeating: 0, count: 65_536) }
        lengthMasks[pair] |= 1 << UInt8(min(length, 8) - 1)
    }

    /// Whether any pair was added.
    var hasPairs: Bool { !lengthMasks.isEmpty }

    /// Calls `body` with the set's 1,024 words (pair `p`: bit `p % 64` of word `p / 64`), for the C
    /// kernel `index_mark_tokens`.
    func withWords<Result>(_ body: (UnsafePointer<UInt64>?) -> Result) -> Result {
        words.withUnsafeBufferPointer { body($0.baseAddress) }
    }

    /// Whether (`first`, `second`) was added.
    @inline(__always)
    func contains(_ first: UInt8, then second: UInt8) -> Bool {
        contains(pair: Int(first) << 8 | Int(second))
    }

    /// Whether the first two bytes of the token `bytes[start..<end]` (`backwards`: its last two,
    /// last first), lower-cased, were added; a token of one byte is that byte then 0.
    @inline(__always)
    func containsPair(startingToken bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int, backwards: Bool)
        -> Bool
    {
        guard end &- start > 1 else { return contains(pair: Int(truncatingIfNeeded: bytes[start] | 0x20) &<< 8) }
        // One load of two bytes, lower-cased by setting bit 5 (a token holds letters and digits
        // only). Little-endian, the first two bytes load with the first low, and the last two
        // with the last high, which is where a pair keeps its first byte.
        let raw = UnsafeRawBufferPointer(bytes)
        let two = UInt16(littleEndian: raw.loadUnaligned(fromByteOffset: backwards ? end &- 2 : start, as: UInt16.self))
        let lowered = two | 0x2020
        return contains(pair: Int(truncatingIfNeeded: backwards ? lowered : lowered.byteSwapped))
    }

    /// Whether the pair `pair` (its first byte high, the second low) was added.
    @inline(__always)
    private func contains(pair: Int) -> Bool {
        words.withUnsafeBufferPointer { $0[pair &>> 6 & 1_023] & (1 &<< UInt64(truncatingIfNeeded: pair)) != 0 }
    }

    /// The lengths of the keys added with (`first`, `second`): bit `n - 1` for length `n`.
    @inline(__always)
    func lengths(_ first: UInt8, then second: UInt8) -> UInt8 {
        guard contains(first, then: second) else { return 0 }
        return lengthMasks.withUnsafeBufferPointer { $0[Int(first) << 8 | Int(second)] }
    }
}
