import AuditRegex

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
        let table: KeyTable
        /// Rules with no usable requirement: matched for every request.
        let alwaysRun: [Int32]
        /// Every rule of the field, for subjects the index cannot reason about.
        let all: [Int32]
        /// Bit `n` set: some prefix (suffix, infix) key is `n` bytes long.
        let prefixLengths: UInt32
        let suffixLengths: UInt32
        let infixLengths: UInt32
        let hasTokenKeys: Bool
        /// Number of rules filed per kind of key (a rule with several alternatives counts once,
        /// under the kind of its first key).
        let rulesByKind: [IndexKey.Kind: Int]
        /// The keys shared by the most rules, most first (at most ten).
        let busiestKeys: [(key: String, rules: Int)]

        init(
            field: RequestField, table: KeyTable, alwaysRun: [Int32], all: [Int32], prefixLengths: UInt32,
            suffixLengths: UInt32, infixLengths: UInt32, hasTokenKeys: Bool, rulesByKind: [IndexKey.Kind: Int],
            busiestKeys: [(key: String, rules: Int)]
        ) {
            self.busiestKeys = busiestKeys
            self.field = field
            self.table = table
            self.alwaysRun = alwaysRun
            self.all = all
            self.prefixLengths = prefixLengths
            self.suffixLengths = suffixLengths
            self.infixLengths = infixLengths
            self.hasTokenKeys = hasTokenKeys
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
        var alwaysRun: [Int32] = []
        var prefixLengths: UInt32 = 0
        var suffixLengths: UInt32 = 0
        var infixLengths: UInt32 = 0
        var hasTokenKeys = false
        var rulesByKind: [IndexKey.Kind: Int] = [:]
        var rulesByKey: [IndexKey: Int] = [:]
        for member in members {
            let pattern = rules[Int(member)].pattern
            // A key shared by many rules makes all of them run whenever it turns up: price it up.
            let filing = RequirementAnalysis.filing(
                of: pattern.source, caseInsensitive: pattern.isCaseInsensitive
            ) { key in key.cost * (1 + Double(rulesByKey[key, default: 0])) }
            guard let filing else {
                alwaysRun.append(member)
                continue
            }
            let keys = filing.requirement.keys
            let confirmation = filing.confirmation?.hashValue64 ?? 0
            rulesByKind[keys[0].kind, default: 0] += 1
            for key in keys {
                rulesByKey[key, default: 0] += 1
                entries.append((key.hashValue64, member, keys.count == 1 ? confirmation : 0))
                let bit = UInt32(1) << UInt32(key.text.count)
                switch key.kind {
                case .token: hasTokenKeys = true
                case .tokenPrefix: prefixLengths |= bit
                case .tokenSuffix: suffixLengths |= bit
                case .infix: infixLengths |= bit
                }
            }
        }
        return FieldGroup(
            field: field, table: KeyTable(entries: entries), alwaysRun: alwaysRun, all: members,
            prefixLengths: prefixLengths, suffixLengths: suffixLengths, infixLengths: infixLengths,
            hasTokenKeys: hasTokenKeys, rulesByKind: rulesByKind,
            busiestKeys: rulesByKey.sorted { ($0.value, $1.key.description) > ($1.value, $0.key.description) }
                .prefix(10).map { ($0.key.description, $0.value) })
    }

    /// The indices of every rule that may match, ascending and without repeats.
    func candidates(for subjects: inout RequestSubjects) -> [Int32] {
        var candidates: [Int32] = []
        for group in groups {
            guard let subject = subjects.subject(for: group.field) else { continue }
            group.collect(in: subject, into: &candidates)
        }
        candidates.sort()
        var unique = 0
        for index in candidates.indices where index == 0 || candidates[index] != candidates[index - 1] {
            candidates[unique] = candidates[index]
            unique += 1
        }
        candidates.removeLast(candidates.count - unique)
        return candidates
    }
}

extension RuleIndex.FieldGroup {
    /// Appends the rules of this group that `subject` may match.
    func collect(in subject: MatchSubject, into candidates: inout [Int32]) {
        candidates.append(contentsOf: alwaysRun)
        subject.bytes.withUnsafeBufferPointer { bytes in
            // First every token's hash (rules filed with a second token are checked against these),
            // then the lookups.
            var tokens = TokenHashes(capacity: bytes.count / 4 + 4)
            var start = 0
            let count = bytes.count
            while start < count {
                let byte = bytes[start]
                guard Self.isAlnum(byte) else {
                    // U+212A (E2 84 AA) and U+017F (C5 BF) match k and s caselessly; tokens cannot
                    // see that, so every rule of the field runs.
                    if byte >= 0xC5, Self.isASCIIFoldingCharacter(bytes, at: start) {
                        candidates.append(contentsOf: all)
                        return
                    }
                    start += 1
                    continue
                }
                var end = start + 1
                var state = IndexKey.hashStep(IndexKey.hashStart, Self.lowered(byte))
                while end < count, Self.isAlnum(bytes[end]) {
                    state = IndexKey.hashStep(state, Self.lowered(bytes[end]))
                    end += 1
                }
                tokens.append(IndexKey.hashFinish(state, .token), start: start, end: end)
                start = end
            }
            for token in tokens.tokens {
                if hasTokenKeys { table.collect(token.hash, confirmedBy: tokens, into: &candidates) }
                if prefixLengths | suffixLengths | infixLengths != 0 {
                    collectAffixes(bytes, Int(token.start), Int(token.end), tokens, into: &candidates)
                }
            }
        }
    }

    private func collectAffixes(
        _ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int, _ tokens: TokenHashes,
        into candidates: inout [Int32]
    ) {
        let length = end - start
        let affixLength = min(length, IndexKey.maximumAffixLength)
        if prefixLengths != 0 {
            var state = IndexKey.hashStart
            for offset in 0..<affixLength {
                state = IndexKey.hashStep(state, Self.lowered(bytes[start + offset]))
                if prefixLengths & (1 << UInt32(offset + 1)) != 0 {
                    table.collect(IndexKey.hashFinish(state, .tokenPrefix), confirmedBy: tokens, into: &candidates)
                }
            }
        }
        if suffixLengths != 0 {
            for suffixLength in 1...affixLength where suffixLengths & (1 << UInt32(suffixLength)) != 0 {
                table.collect(
                    hash(.tokenSuffix, bytes, end - suffixLength, end), confirmedBy: tokens, into: &candidates)
            }
        }
        if infixLengths != 0 {
            for infixLength in 1...min(length, IndexKey.maximumInfixLength)
            where infixLengths & (1 << UInt32(infixLength)) != 0 {
                for offset in start...(end - infixLength) {
                    table.collect(
                        hash(.infix, bytes, offset, offset + infixLength), confirmedBy: tokens, into: &candidates)
                }
            }
        }
    }

    @inline(__always)
    private func hash(_ kind: IndexKey.Kind, _ bytes: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> UInt64 {
        var state = IndexKey.hashStart
        for index in start..<end { state = IndexKey.hashStep(state, Self.lowered(bytes[index])) }
        return IndexKey.hashFinish(state, kind)
    }

    @inline(__always)
    static func isAlnum(_ byte: UInt8) -> Bool {
        (byte &- UInt8(ascii: "0") < 10) || ((byte | 0x20) &- UInt8(ascii: "a") < 26)
    }

    @inline(__always)
    static func lowered(_ byte: UInt8) -> UInt8 {
        (byte &- UInt8(ascii: "A") < 26) ? byte | 0x20 : byte
    }

    /// Whether U+212A (E2 84 AA) or U+017F (C5 BF) starts at `index`.
    static func isASCIIFoldingCharacter(_ bytes: UnsafeBufferPointer<UInt8>, at index: Int) -> Bool {
        if bytes[index] == 0xC5 { return index + 1 < bytes.count && bytes[index + 1] == 0xBF }
        return bytes[index] == 0xE2 && index + 2 < bytes.count && bytes[index + 1] == 0x84 && bytes[index + 2] == 0xAA
    }
}

/// The tokens of one subject: their hashes and where they are, plus a 64-bit summary that answers
/// most "does the subject have this token?" questions without a search.
struct TokenHashes {
    struct Token {
        let hash: UInt64
        let start: Int32
        let end: Int32
    }

    private(set) var tokens: [Token] = []
    private var summary: UInt64 = 0

    init(capacity: Int) { tokens.reserveCapacity(capacity) }

    mutating func append(_ hash: UInt64, start: Int, end: Int) {
        tokens.append(Token(hash: hash, start: Int32(truncatingIfNeeded: start), end: Int32(truncatingIfNeeded: end)))
        summary |= 1 << (hash >> 58)
    }

    /// Whether some token has hash `hash`.
    @inline(__always)
    func contains(_ hash: UInt64) -> Bool {
        guard summary & (1 << (hash >> 58)) != 0 else { return false }
        return tokens.contains { $0.hash == hash }
    }
}
