/// How a policy's rules are filed in its index: how many are found through the tokens a request
/// must carry, and how many run for every request because their pattern names no usable token.
///
/// `audit lint --stats` prints these; keep ``alwaysRun`` small, since each of those rules costs a
/// PCRE2 match on every request.
public struct IndexStatistics: Sendable, Equatable {
    /// Rules in the policy.
    public let rules: Int
    /// Rules found through a whole token (`doubleclick` in `||doubleclick.net^`).
    public let byToken: Int
    /// Rules found through two neighbouring whole tokens (`ads` then `example` in
    /// `||ads.example.com^`).
    public let byTokenPair: Int
    /// Rules found through the start or end of a token.
    public let byTokenAffix: Int
    /// Rules found through a few letters inside a token.
    public let byInfix: Int
    /// Of the rules above, those found only through tokens of the URL's authority (its host part),
    /// which are not looked up for the tokens of the path and query: the host rules ad-block
    /// converters write (`||ads.example.com^`).
    public let inHost: Int
    /// Rules whose pattern's shape answers without PCRE2 for most requests (those of printable
    /// ASCII): among the rules run for every request or found through a key most requests carry,
    /// those whose pattern needs literal text, a run of characters from a class, or a given start
    /// or end, or says "contains none of" (`^(?!.*(a|b|c)).*$`).
    public let byShape: Int
    /// Ids of the rules matched for every request.
    public let alwaysRunRuleIDs: [String]
    /// Distinct keys in the index.
    public let distinctKeys: Int
    /// The keys shared by the most rules (at most ten), most first: the rules behind a key run
    /// whenever a request carries it.
    public let busiestKeys: [BusyKey]

    /// A key of the index and how many rules it leads to.
    public struct BusyKey: Sendable, Equatable {
        /// The key: a token (`doubleclick`), two neighbouring tokens (`ads.example`), a token start
        /// (`track…`), end (`…ads`) or inside (`…pixel…`).
        public let key: String
        /// Rules filed under it.
        public let rules: Int
    }

    /// Number of rules matched for every request.
    public var alwaysRun: Int { alwaysRunRuleIDs.count }
}

extension Policy {
    /// How the rules are filed in the policy's index.
    public var indexStatistics: IndexStatistics {
        var byKind: [IndexKey.Kind: Int] = [:]
        var alwaysRun: [Int32] = []
        var keys = 0
        var inHost = 0
        var busiest: [IndexStatistics.BusyKey] = []
        for group in index.groups {
            busiest += group.busiestKeys.map { IndexStatistics.BusyKey(key: $0.key, rules: $0.rules) }
            byKind.merge(group.rulesByKind, uniquingKeysWith: +)
            alwaysRun += group.alwaysRun
            keys += group.table.keyCount + group.authorityTable.keyCount
            inHost += group.rulesInAuthority
        }
        return IndexStatistics(
            rules: rules.count, byToken: byKind[.token, default: 0], byTokenPair: byKind[.tokenPair, default: 0],
            byTokenAffix: byKind[.tokenPrefix, default: 0] + byKind[.tokenSuffix, default: 0],
            byInfix: byKind[.infix, default: 0], inHost: inHost, byShape: index.shortcuts.count,
            alwaysRunRuleIDs: alwaysRun.sorted().map { rules[Int($0)].id },
            distinctKeys: keys, busiestKeys: Array(busiest.sorted { $0.rules > $1.rules }.prefix(10)))
    }
}

extension Policy {
    /// The rules `request` may match: those neither the index nor their pattern's shape rules out.
    /// An evaluation runs PCRE2 for each of them, except those whose shape says they match.
    ///
    /// For tuning a policy: a request with many candidates is slow to decide.
    public func candidateRules(for request: AuditRequest) -> [Rule] {
        var subjects = RequestSubjects()
        return CandidateList.withEmptyList { candidates in
            index.collectCandidates(
                for: request, isURLCanonical: URLParts.isCanonical(request.url), subjects: &subjects,
                into: &candidates)
            index.shortcuts.answer(&candidates, for: request, subjects: &subjects)
            return candidates.rules.map { rules[Int($0 & ~CandidateList.matchesForSure)] }
        }
    }
}
