import AuditPolicy
import AuditReport

/// What a front-end does with a request the pipeline admitted, before anything is sent.
///
/// The pipeline turns the verdict into one of these, so that no front-end switches on the verdict
/// itself: a front-end that cannot carry out a redirect or a local response (a CONNECT tunnel, a
/// download task) says so with ``FrontEndCapabilities`` and gets a refusal instead.
public enum Admission: Sendable, Equatable {
    /// Send the request: as made (`redirectedTo` nil), or to a redirect rule's target.
    case send(redirectedTo: String?)
    /// Answer it with the deciding rule's local response (its body or file, or a handler's: see
    /// ``AuditedRequest/localResponse(for:body:)``); nothing is sent.
    case respond(LocalResponse)
    /// Refuse it; nothing is sent.
    case refuse(Refusal)
    /// A warn rule matched: resolve the warning first (``AuditedRequest/resolveWarning(askHandler:)``
    /// or ``AuditedRequest/resolveWarning(acknowledgements:fallback:)``), which gives `send` or `refuse`.
    case warn
}

/// Why a request is refused, with what a front-end needs to tell its client.
public struct Refusal: Sendable, Equatable {
    /// Why.
    public enum Reason: Sendable, Equatable {
        /// A block rule matched.
        case blocked
        /// A warning was declined (by the handler, by default, or unacknowledged).
        case warningDeclined
        /// A redirect rule matched where the front-end cannot redirect; `target` is the rule's target
        /// (redacted).
        case redirectUnavailable(target: String)
        /// A respond rule matched where the front-end cannot answer locally.
        case responseUnavailable
    }

    /// Why.
    public let reason: Reason
    /// The deciding rule's id, or `-`.
    public let rule: String
    /// The rule's message, if any.
    public let message: String?
    /// The request's URL as recorded (canonical, redacted).
    public let url: String

    /// Creates a refusal.
    public init(_ reason: Reason, rule: String, message: String?, url: String) {
        self.reason = reason
        self.rule = rule
        self.message = message
        self.url = url
    }

    /// How a refused request's outcome is recorded.
    public var outcomeKind: OutcomeSnapshot.Kind {
        reason == .warningDeclined ? .warningDeclined : .blocked
    }
}

/// What a front-end can carry out beyond sending or refusing a request.
public struct FrontEndCapabilities: OptionSet, Sendable {
    /// The raw bits.
    public let rawValue: Int

    /// Creates capabilities from their bits.
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// Send the request to a redirect rule's target instead.
    public static let redirect = FrontEndCapabilities(rawValue: 1 << 0)
    /// Answer the request with a rule's local response.
    public static let respond = FrontEndCapabilities(rawValue: 1 << 1)
    /// Both.
    public static let all: FrontEndCapabilities = [.redirect, .respond]
}
