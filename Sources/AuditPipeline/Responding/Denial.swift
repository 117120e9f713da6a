import AuditPolicy
import AuditReport
import Foundation

/// The JSON body of an answer RequestAudit gives itself instead of a server's (a refusal or an
/// error), written so that an agent can act on it: what happened, which rule, and how to go on.
///
/// `audit proxy` answers with it, and `audit authz` hands it to the gateway that asked, so a client
/// reads the same body whichever front-end refused its request.
public struct Denial: Encodable, Sendable {
    /// `blocked`, `invalid-url`, `warning`, `redirect-unavailable`, `respond-unavailable`, `upstream`,
    /// `bad-request`, `timeout`, `too-large`, `busy`.
    public let error: String
    /// The deciding rule's id.
    public let rule: String?
    /// The deciding rule's category.
    public let category: String?
    /// The deciding rule's message.
    public let message: String?
    /// The request's id (its record's).
    public let requestID: String?
    /// What to do about it, in words.
    public let hint: String?
    /// For a warning: the header and value a retry carries to proceed.
    public let acknowledge: Acknowledge?

    /// The header and value that acknowledge a warning.
    public struct Acknowledge: Encodable, Sendable {
        /// The header's name.
        public let header: String
        /// Its value: the rule's id.
        public let value: String
    }

    /// Creates a denial.
    public init(
        error: String, rule: String?, category: String?, message: String?, requestID: String?, hint: String?,
        acknowledge: Acknowledge?
    ) {
        self.error = error
        self.rule = rule
        self.category = category
        self.message = message
        self.requestID = requestID
        self.hint = hint
        self.acknowledge = acknowledge
    }

    /// The header a client sends to acknowledge a warning.
    public static let acknowledgeHeader = "Audit-Acknowledge"
    /// The header naming the rule that decided a request.
    public static let ruleHeader = "X-Request-Audit-Rule"

    /// The denial of `decision`, refused for `reason` by a front-end that says why a redirect or a
    /// local response is not available in `unavailable` (its words, completing "which …").
    public static func refusal(
        _ reason: Refusal.Reason, _ decision: AuditPipeline.Decision, unavailable: @autoclosure () -> String
    ) -> Denial {
        switch reason {
        case .blocked: .blocked(decision)
        case .warningDeclined: .warning(decision)
        case .redirectUnavailable: .redirectUnavailable(decision, because: unavailable())
        case .responseUnavailable: .responseUnavailable(decision, because: unavailable())
        }
    }

    /// A local response of `decision` that the front-end cannot give, `because` (completing "which …").
    public static func responseUnavailable(_ decision: AuditPipeline.Decision, because: String) -> Denial {
        Denial(
            error: "respond-unavailable", rule: decision.decision.rule, category: decision.decision.category,
            message: decision.decision.message, requestID: decision.id.uuidString,
            hint: "the audit policy answers this request locally, which " + because, acknowledge: nil)
    }

    /// Why a front-end outside the app cannot give `decision`'s local response when it comes from a
    /// Swift handler (completing "which …"): only an app that registers the handler can run it;
    /// `frontEnd` (`audit proxy`, `audit authz`) serves `body=` and `file=` responses.
    public static func handlerOnly(_ decision: AuditPipeline.Decision, frontEnd: String) -> String {
        "comes from the Swift handler '\(decision.verdict.response?.handler ?? "-")', which only an app that registers "
            + "it can run; \(frontEnd) serves body= and file= responses. It was not sent"
    }

    /// The denial of a blocked request (or of an invalid URL, which the policy refuses).
    public static func blocked(_ decision: AuditPipeline.Decision) -> Denial {
        if let rejection = decision.verdict.urlRejection {
            return Denial(
                error: "invalid-url", rule: nil, category: nil, message: rejection.description,
                requestID: decision.id.uuidString,
                hint: "the WHATWG URL Standard calls this URL invalid, so no rule can tell which server or resource "
                    + "it names; it was not sent", acknowledge: nil)
        }
        return Denial(
            error: "blocked", rule: decision.decision.rule, category: decision.decision.category,
            message: decision.decision.message, requestID: decision.id.uuidString,
            hint: "the audit policy blocks this request; it was not sent", acknowledge: nil)
    }

    /// The denial of an unacknowledged warning, with how to acknowledge it.
    public static func warning(_ decision: AuditPipeline.Decision) -> Denial {
        let rule = decision.decision.rule ?? "-"
        return Denial(
            error: "warning", rule: rule, category: decision.decision.category, message: decision.decision.message,
            requestID: decision.id.uuidString,
            hint: "the audit policy warns about this request; it was not sent. To proceed, send it again with the "
                + "header '\(acknowledgeHeader): \(rule)'",
            acknowledge: Acknowledge(header: acknowledgeHeader, value: rule))
    }

    /// A redirect of `decision` the front-end cannot follow, `because` (completing "which …").
    public static func redirectUnavailable(_ decision: AuditPipeline.Decision, because: String) -> Denial {
        Denial(
            error: "redirect-unavailable", rule: decision.decision.rule, category: decision.decision.category,
            message: decision.decision.message, requestID: decision.id.uuidString,
            hint: "the audit policy redirects this request to \(decision.decision.redirect ?? "-"), which "
                + because, acknowledge: nil)
    }

    /// A problem with the request itself (`error` names it), not a decision.
    public static func problem(_ error: String, _ message: String) -> Denial {
        Denial(
            error: error, rule: nil, category: nil, message: message, requestID: nil, hint: nil, acknowledge: nil)
    }

    /// The body, as compact JSON with keys in a fixed order.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else { return #"{"error":"\#(error)"}"# }
        return String(decoding: data, as: UTF8.self)
    }
}
