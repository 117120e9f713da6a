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
        /// A respond rule won: the request is answered locally; see ``Verdict/response``.
        case respond
    }

    /// The decision.
    public let action: Action
    /// The rule that decided, or that failed when a match error blocks; nil for `pass`.
    public let rule: Rule?
    /// Every matching `record` rule, in policy order, whatever the verdict.
    public let recorded: [Rule]
    /// The redirect target, the local response and the match errors, which few verdicts have: kept
    /// out of line, so that a verdict is four words, which a caller gets in registers and drops with
    /// a few releases (a larger verdict goes through memory, each field dropped through its type's
    /// value witnesses).
    private let rare: Rare?

    /// A verdict's rarely set fields.
    private final class Rare: Sendable {
        let redirectTarget: String?
        let response: LocalResponse?
        let cacheRule: Rule?
        let errors: [EvaluationError]

        init(redirectTarget: String?, response: LocalResponse?, cacheRule: Rule?, errors: [EvaluationError]) {
            self.redirectTarget = redirectTarget
            self.response = response
            self.cacheRule = cacheRule
            self.errors = errors
        }
    }

    /// For `redirect`, the target with captures substituted.
    public var redirectTarget: String? { rare?.redirectTarget }
    /// For `respond`, the local response (captures substituted), or the handler that gives it.
    public var response: LocalResponse? { rare?.response }
    /// The matching `cache` rule of highest priority (then the earliest), whatever the verdict: when
    /// the request is sent, its response may be stored and served again as the rule says.
    public var cacheRule: Rule? { rare?.cacheRule }
    /// Matches that could not be completed, in policy order.
    public var errors: [EvaluationError] { rare?.errors ?? [] }

    /// Creates a verdict.
    public init(
        action: Action, rule: Rule? = nil, redirectTarget: String? = nil, response: LocalResponse? = nil,
        recorded: [Rule] = [], cacheRule: Rule? = nil, errors: [EvaluationError] = []
    ) {
        self.action = action
        self.rule = rule
        self.recorded = recorded
        rare =
            redirectTarget == nil && response == nil && cacheRule == nil && errors.isEmpty
            ? nil
            : Rare(redirectTarget: redirectTarget, response: response, cacheRule: cacheRule, errors: errors)
    }

    /// Verdicts are equal when their action, rule, redirect target, response, recorded rules and
    /// errors are.
    public static func == (lhs: Verdict, rhs: Verdict) -> Bool {
        lhs.action == rhs.action && lhs.rule == rhs.rule && lhs.recorded == rhs.recorded
            && lhs.redirectTarget == rhs.redirectTarget && lhs.response == rhs.response
            && lhs.cacheRule == rhs.cacheRule
            && lhs.errors == rhs.errors
    }

    /// The deciding rule's `message=`, if any.
    public var message: String? { rule?.message }

    /// Whether the request must not reach the network as sent.
    public var isBlocking: Bool { action == .block }

    /// A `block` verdict for a request whose URL is invalid: no rule decides it.
    public static func refusing(_ rejection: URLRejection) -> Verdict {
        Verdict(action: .block, errors: [EvaluationError(ruleID: "-", reason: .invalidURL(rejection))])
    }

    /// A `block` verdict for a request whose `Host` header names another server than its URL
    /// (`problem` says how): no rule decides it.
    public static func refusing(contradictoryHost problem: String) -> Verdict {
        Verdict(action: .block, errors: [EvaluationError(ruleID: "-", reason: .contradictoryHost(problem))])
    }

    /// Why the request's URL was refused as invalid, when it was.
    public var urlRejection: URLRejection? {
        for error in errors { if case .invalidURL(let rejection) = error.reason { return rejection } }
        return nil
    }

    /// Whether any match failed.
    public var hasErrors: Bool { rare?.errors.isEmpty == false }

    /// E.g. `block by competitor/rival-shop`, `redirect by c/s -> https://…`,
    /// `respond by local/pixel (200, image/gif, 43 bytes)`, `pass`.
    public var description: String {
        var text = action.rawValue
        if let rule { text += " by \(rule.id)" }
        if rule == nil, let urlRejection { text += " (\(urlRejection))" }
        if let redirectTarget { text += " -> \(redirectTarget)" }
        if let response { text += " (\(response.summary))" }
        if let cacheRule { text += ", cache by \(cacheRule.id)" }
        return text
    }
}
