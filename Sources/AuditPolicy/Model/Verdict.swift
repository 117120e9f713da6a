/// What a policy decided about one request.
public struct Verdict: Sendable, Equatable, CustomStringConvertible {
    /// The decision.
    public enum Action: String, Sendable, Hashable, Codable, CaseIterable {
        /// No deciding rule matched.
        case pass
        /// An allow rule matched and won.
        case allow
        /// A block rule won, or a match failed and the policy fails closed.
        case block
        /// A redirect rule won; see ``Verdict/redirectTarget``.
        case redirect
        /// A warn rule won.
        case warn
    }

    /// The decision.
    public let action: Action
    /// The rule that decided, or that failed when a match error blocks; nil for `pass`.
    public let rule: Rule?
    /// For `redirect`, the target with captures substituted.
    public let redirectTarget: String?
    /// Every matching `record` rule, in policy order, whatever the verdict.
    public let recorded: [Rule]
    /// Matches that could not be completed, in policy order.
    public let errors: [EvaluationError]

    /// Creates a verdict.
    public init(
        action: Action, rule: Rule? = nil, redirectTarget: String? = nil, recorded: [Rule] = [],
        errors: [EvaluationError] = []
    ) {
        self.action = action
        self.rule = rule
        self.redirectTarget = redirectTarget
        self.recorded = recorded
        self.errors = errors
    }

    /// The deciding rule's `message=`, if any.
    public var message: String? { rule?.message }

    /// Whether the request must not reach the network as sent.
    public var isBlocking: Bool { action == .block }

    /// Whether any match failed.
    public var hasErrors: Bool { !errors.isEmpty }

    /// E.g. `block by competitor/rival-shop`, `redirect by c/s -> https://…`, `pass`.
    public var description: String {
        var text = action.rawValue
        if let rule { text += " by \(rule.id)" }
        if let redirectTarget { text += " -> \(redirectTarget)" }
        return text
    }
}
