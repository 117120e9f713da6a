/// What a decision is compared on when two policies decide the same request: the verdict, the
/// deciding rule, the redirect target and the set of recording rules.
public struct DecisionSummary: Sendable, Hashable, Codable {
    /// The verdict's action.
    public var verdict: Verdict.Action
    /// The deciding rule's full id, if a rule decided.
    public var rule: String?
    /// The redirect target, for a redirect.
    public var redirect: String?
    /// The full ids of the `record` rules that matched, in policy order.
    public var recorded: [String]

    /// The summary of `verdict`.
    public init(_ verdict: Verdict) {
        self.verdict = verdict.action
        rule = verdict.rule?.id
        redirect = verdict.redirectTarget
        recorded = verdict.recorded.map(\.id)
    }

    /// A summary from its parts.
    public init(verdict: Verdict.Action, rule: String? = nil, redirect: String? = nil, recorded: [String] = []) {
        self.verdict = verdict
        self.rule = rule
        self.redirect = redirect
        self.recorded = recorded
    }

    /// `verdict (rule)`, for people.
    public var text: String { rule.map { "\(verdict.rawValue) (\($0))" } ?? verdict.rawValue }
}

/// A request two policies decide differently.
public struct DecisionChange: Sendable, Equatable {
    /// The request.
    public var request: AuditRequest
    /// The old policy's decision.
    public var old: DecisionSummary
    /// The new policy's decision.
    public var new: DecisionSummary
}

/// Two policies side by side: what changes, request by request, when the old one is replaced by
/// the new one (`audit diff`), or what a shadow policy would have decided.
public struct PolicyComparison: Sendable {
    /// The policy in force.
    public let old: Policy
    /// The candidate.
    public let new: Policy
    /// What a failing match does, in both.
    public let onError: MatchErrorHandling

    /// Compares `old` with `new`.
    public init(old: Policy, new: Policy, onError: MatchErrorHandling = .block) {
        self.old = old
        self.new = new
        self.onError = onError
    }

    /// The change for `request`, or nil when both policies decide it alike.
    public func change(for request: AuditRequest) -> DecisionChange? {
        let before = DecisionSummary(old.evaluate(request, onError: onError))
        let after = DecisionSummary(new.evaluate(request, onError: onError))
        return before == after ? nil : DecisionChange(request: request, old: before, new: after)
    }
}

/// The changes of a comparison over many requests, grouped for people.
public struct DecisionChanges: Sendable {
    /// One group: requests whose verdict went from `old` to `new`, by `rule` (the new deciding rule,
    /// or the old one when no rule decides now).
    public struct Group: Sendable, Hashable {
        /// The old verdict.
        public var old: Verdict.Action
        /// The new verdict.
        public var new: Verdict.Action
        /// The rule behind the change.
        public var rule: String?
    }

    /// How many examples each group keeps.
    public static let examplesPerGroup = 3

    /// Requests compared.
    public private(set) var total = 0
    /// Every change, in the order the requests came.
    public private(set) var changes: [DecisionChange] = []
    /// Changes per group.
    public private(set) var counts: [Group: Int] = [:]
    /// The first few changes of each group.
    public private(set) var examples: [Group: [DecisionChange]] = [:]

    /// No requests yet.
    public init() {}

    /// Counts one compared request, and its change if it has one.
    public mutating func add(_ change: DecisionChange?) {
        total += 1
        guard let change else { return }
        changes.append(change)
        let group = Group(old: change.old.verdict, new: change.new.verdict, rule: change.new.rule ?? change.old.rule)
        counts[group, default: 0] += 1
        if examples[group, default: []].count < Self.examplesPerGroup { examples[group, default: []].append(change) }
    }

    /// Adds `other`'s requests after these.
    public mutating func merge(_ other: DecisionChanges) {
        total += other.total
        for change in other.changes { add(change) }
        total -= other.changes.count
    }

    /// The groups, largest first (then by verdicts and rule, for a stable order).
    public var groups: [(group: Group, count: Int)] {
        counts.map { ($0.key, $0.value) }.sorted {
            if $0.count != $1.count { return $0.count > $1.count }
            let left = ($0.group.old.rawValue, $0.group.new.rawValue, $0.group.rule ?? "")
            let right = ($1.group.old.rawValue, $1.group.new.rawValue, $1.group.rule ?? "")
            return left < right
        }
    }
}
