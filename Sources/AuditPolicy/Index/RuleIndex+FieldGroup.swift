import AuditLocking
import AuditRegex
internal import CByteClasses
import Dispatch

extension RuleIndex {
    final class FieldGroup: Sendable {
        let field: RequestField
        /// Keys looked up among every token of the subject.
        let table: KeyTable
        /// Keys looked up only among the tokens of the URL's authority (see
        /// ``IndexKey/isInAuthority``): a host rule's tokens are not looked up for each token of a
        /// long path or query.
        let authorityTable: KeyTable
        let hasAuthorityKeys: Bool
        /// Whether a token of the authority may be a key of `authorityTable`, and whether it may
        /// start a pair key there.
        let authorityGate: TokenGate
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
        /// What a subject's tokens are marked by as they are found: the token gate, the gates of
        /// the start and end keys and the authority gate, as the group's keys require.
        let marking: TokenMarking
        /// With many infix keys: the pairs an infix key starts with, in either case (a key of one
        /// byte: its byte then any), for the C kernel `literal_pair_starts`.
        let infixPairs: PairBits
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

        /// The group the builder has filed.
        init(_ builder: Builder) {
            field = builder.field
            table = KeyTable(entries: builder.entries)
            authorityTable = KeyTable(entries: builder.authorityEntries)
            hasAuthorityKeys = authorityTable.keyCount > 0
            authorityGate = TokenGate(
                keys: Array(Set(builder.authorityEntries.map(\.hash))), pairStarts: builder.authorityPairStarts)
            alwaysRun = builder.alwaysRun
            all = builder.members
            hasPrefixKeys = builder.hasPrefixKeys
            hasSuffixKeys = builder.hasSuffixKeys
            hasInfixKeys = builder.hasInfixKeys
            hasTokenKeys = builder.hasTokenKeys
            hasPairKeys = builder.hasPairKeys
            tokenGate = TokenGate(keys: builder.tokenKeys, pairStarts: builder.pairStarts)
            prefixGate = builder.prefixGate
            suffixGate = builder.suffixGate
            prefixStarts = builder.prefixStarts.gate
            suffixEnds = builder.suffixEnds.gate
            infixGate = builder.infixGate
            fewInfixKeys = FewKeys(builder.infixKeys)
            checksTokenGate = hasTokenKeys || hasPairKeys
            checksInfixGate = hasInfixKeys && fewInfixKeys == nil
            marking = TokenMarking(
                gate: tokenGate, readsGate: checksTokenGate, prefixes: prefixStarts, readsPrefixes: hasPrefixKeys,
                suffixes: suffixEnds, readsSuffixes: hasSuffixKeys, authorityGate: authorityGate,
                readsAuthority: hasAuthorityKeys)
            var infixPairs = PairBits()
            if checksInfixGate {
                for key in builder.infixKeys {
                    infixPairs.insertInEitherCase(key[0], then: key.count > 1 ? key[1] : nil)
                }
            }
            self.infixPairs = infixPairs
            rulesByKind = builder.rulesByKind
            rulesInAuthority = builder.rulesInAuthority
            busiestKeys = builder.busiestKeys
        }
    }
}
