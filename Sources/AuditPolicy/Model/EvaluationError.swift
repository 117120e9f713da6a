import AuditRegex

/// A rule that could not be evaluated for a request.
public struct EvaluationError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why the rule could not be evaluated.
    public enum Reason: Sendable, Equatable {
        /// PCRE2 gave up (match, depth or heap limit) or failed.
        case matchFailed(PatternError)
        /// The redirect target, after substitution, is not an absolute http(s) URL.
        case invalidRedirectTarget(String)
        /// The request's URL is invalid (WHATWG URL Standard): it is refused whatever the rules say.
        case invalidURL(URLRejection)
        /// The request's `Host` header names another server than its URL (the description says how,
        /// see ``AuditRequest/hostHeaderContradiction``): it is refused whatever the rules say.
        case contradictoryHost(String)
    }

    /// The full id of the rule.
    public let ruleID: String
    /// What went wrong.
    public let reason: Reason

    /// Creates an evaluation error.
    public init(ruleID: String, reason: Reason) {
        self.ruleID = ruleID
        self.reason = reason
    }

    /// E.g. `competitor/slow: match limit exceeded (…)`.
    public var description: String {
        switch reason {
        case .matchFailed(let error): "\(ruleID): \(error)"
        case .invalidRedirectTarget(let target): "\(ruleID): redirect target '\(target)' is not an absolute http(s) URL"
        case .invalidURL(let rejection): rejection.description
        case .contradictoryHost(let problem): problem
        }
    }
}

/// What evaluation does when a rule's match fails or its redirect target comes out invalid.
public enum MatchErrorHandling: String, Sendable, Hashable, CaseIterable {
    /// Fail closed: the verdict is `block`, naming the failing rule (the default).
    case block
    /// Ignore the failing rule and decide with the others; the error is still reported.
    case pass
}
