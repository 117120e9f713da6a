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
    let groups: [FieldGroup]
    /// Number of rules of the policy.
    let ruleCount: Int
    /// What the shapes of the rules the index finds for most requests tell without PCRE2.
    let shortcuts: ShortcutTable

    /// Rules filed under a key this costly (one most requests carry: `com`, `js`, `http…`) get a
    /// ``RuleShortcut`` when their shape gives one, as do the rules run for every request. For a
    /// rarer key, the search for the shortcuts' literals would cost the requests that carry it more
    /// than the PCRE2 calls it saves.
    static let shortcutCost = 0.9

    init(rules: [Rule]) {
        ruleCount = rules.count
        var order: [RequestField] = []
        var members: [RequestField: [Int32]] = [:]
        for (index, rule) in rules.enumerated() {
            if members[rule.field] == nil { order.append(rule.field) }
            members[rule.field, default: []].append(Int32(index))
        }
        var shortcuts: [Int32: (shortcut: RuleShortcut, field: RequestField)] = [:]
        groups = order.map { field in
            Self.group(field: field, members: members[field] ?? [], rules: rules, shortcuts: &shortcuts)
        }
        self.shortcuts = ShortcutTable(shortcuts: shortcuts, ruleCount: rules.count)
    }

    private static func group(
        field: RequestField, members: [Int32], rules: [Rule],
        shortcuts: inout [Int32: (shortcut: RuleShortcut, field: RequestField)]
    ) -> FieldGroup {
        var builder = FieldGroup.Builder(field: field, members: members)
        for (member, filing) in zip(members, filings(of: members, rules: rules)) {
            builder.file(member, filing)
            // A literal pattern is already matched by a byte search.
            let pattern = rules[Int(member)].pattern
            guard (filing?.requirement.cost ?? 1) >= shortcutCost, !pattern.isLiteral else { continue }
            if let shortcut = RuleShortcut(
                pattern: pattern.source, caseInsensitive: pattern.isCaseInsensitive,
                answersMatches: pattern.limits.matchLimit >= MatchLimits.default.matchLimit
                    && pattern.limits.depthLimit >= MatchLimits.default.depthLimit)
            {
                shortcuts[member] = (shortcut, field)
            }
        }
        return FieldGroup(builder)
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

    /// Adds to `candidates` the index of every rule that may match, ascending and without repeats.
    ///
    /// A canonical URL is scanned as sent; any other, in its canonical form.
    func collectCandidates(
        for request: AuditRequest, isURLCanonical: Bool, subjects: inout RequestSubjects,
        into candidates: inout CandidateList
    ) {
        for group in groups {
            if isURLCanonical, group.field == .url,
                group.collect(in: request.url.utf8.span, into: &candidates, requiringASCII: true)
            {
                continue
            }
            guard let subject = subjects.subject(for: group.field, of: request) else { continue }
            subject.withSpan { _ = group.collect(in: $0, into: &candidates) }
        }
        candidates.sortWithoutRepeats(ruleCount: ruleCount)
    }

    /// ``collectCandidates(for:isURLCanonical:subjects:into:)`` without building any subject, for the
    /// common case of a policy whose rules all read the URL and a request whose URL is canonical
    /// (the caller has checked); in every other case, returns false having added nothing.
    func collectCandidates(forURLOf request: AuditRequest, into candidates: inout CandidateList) -> Bool {
        guard groups.count == 1, groups[0].field == .url else { return false }
        let group = groups[0]
        guard group.collect(in: request.url.utf8.span, into: &candidates, requiringASCII: true) else { return false }
        candidates.sortWithoutRepeats(ruleCount: ruleCount)
        return true
    }
}
