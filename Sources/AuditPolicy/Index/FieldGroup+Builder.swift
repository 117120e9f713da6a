extension RuleIndex.FieldGroup {
    /// Collects a field's rules one filing at a time: the key tables' entries, the gates and the
    /// statistics a ``RuleIndex/FieldGroup`` is then made of.
    struct Builder {
        let field: RequestField
        /// Every rule of the field, in policy order.
        let members: [Int32]
        private(set) var entries: [KeyTable.Entry] = []
        private(set) var authorityEntries: [KeyTable.Entry] = []
        /// The first tokens of the authority entries' pair keys.
        private(set) var authorityPairStarts: [UInt64] = []
        private(set) var rulesInAuthority = 0
        private(set) var alwaysRun: [Int32] = []
        private(set) var hasPrefixKeys = false
        private(set) var hasSuffixKeys = false
        private(set) var hasInfixKeys = false
        private(set) var hasTokenKeys = false
        private(set) var hasPairKeys = false
        private(set) var tokenKeys: [UInt64] = []
        private(set) var pairStarts: [UInt64] = []
        private(set) var prefixGate = BytePairSet()
        private(set) var suffixGate = BytePairSet()
        private(set) var prefixStarts = AffixGate.Builder()
        private(set) var suffixEnds = AffixGate.Builder()
        private(set) var infixGate = BytePairSet()
        private(set) var infixKeys: Set<[UInt8]> = []
        private(set) var rulesByKind: [IndexKey.Kind: Int] = [:]
        private var rulesByKey: [IndexKey: Int] = [:]

        init(field: RequestField, members: [Int32]) {
            self.field = field
            self.members = members
        }

        /// Files `member` under its filing's keys, or among the rules run for every request when
        /// it has none.
        mutating func file(_ member: Int32, _ filing: RequirementAnalysis.Filing?) {
            guard let filing else {
                alwaysRun.append(member)
                return
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
                    if key.kind == .tokenPair { authorityPairStarts.append(key.pairTokens.0.hashValue64) }
                    continue
                }
                entries.append(entry)
                add(key, entry)
            }
        }

        /// Records a key looked up among every token of the subject in the gate of its kind.
        private mutating func add(_ key: IndexKey, _ entry: KeyTable.Entry) {
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
                prefixGate.insert(key.text[0], then: key.text.count > 1 ? key.text[1] : nil, length: key.text.count)
            case .tokenSuffix:
                hasSuffixKeys = true
                let last = key.text.count - 1
                suffixEnds.insert(key.text.reversed())
                suffixGate.insert(key.text[last], then: last > 0 ? key.text[last - 1] : nil, length: key.text.count)
            case .infix:
                hasInfixKeys = true
                infixKeys.insert(key.text)
                infixGate.insert(key.text[0], then: key.text.count > 1 ? key.text[1] : nil, length: key.text.count)
            }
        }

        /// The keys shared by the most rules, most first (at most ten).
        var busiestKeys: [(key: String, rules: Int)] { Self.busiest(rulesByKey) }

        /// The ten keys shared by the most rules, most first, ties by name. Only keys tied with the
        /// tenth count are named and compared by name: naming 100,000 keys would cost more than the
        /// rest of the index.
        private static func busiest(_ rulesByKey: [IndexKey: Int]) -> [(key: String, rules: Int)] {
            let counts = rulesByKey.values.sorted(by: >)
            guard let tenth = counts.prefix(10).last else { return [] }
            return rulesByKey.filter { $0.value >= tenth }.map { (key: $0.key.description, rules: $0.value) }
                .sorted { ($0.rules, $1.key) > ($1.rules, $0.key) }.prefix(10).map { $0 }
        }
    }
}
