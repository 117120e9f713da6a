import AuditPipeline
import AuditPolicy
import Foundation

/// The JSON body of a response the proxy makes itself (a refusal or an error), written so that an
/// agent can act on it: what happened, which rule, and how to go on.
struct ProxyDenial: Encodable, Sendable {
    /// `blocked`, `warning`, `redirect-unavailable`, `respond-unavailable`, `upstream`, `bad-request`, `timeout`, `too-large`,
    /// `busy`.
    let error: String
    let rule: String?
    let category: String?
    let message: String?
    let requestID: String?
    /// What to do about it, in words.
    let hint: String?
    /// For a warning: the header and value a retry carries to proceed.
    let acknowledge: Acknowledge?

    struct Acknowledge: Encodable, Sendable {
        let header: String
        let value: String
    }

    /// The header a client sends to acknowledge a warning.
    static let acknowledgeHeader = "Audit-Acknowledge"
    /// The header naming the rule that refused a request.
    static let ruleHeader = "X-Request-Audit-Rule"

    static func blocked(_ decision: AuditPipeline.Decision) -> ProxyDenial {
        if let rejection = decision.verdict.urlRejection {
            return ProxyDenial(
                error: "invalid-url", rule: nil, category: nil, message: rejection.description,
                requestID: decision.id.uuidString,
                hint: "the WHATWG URL Standard calls this URL invalid, so no rule can tell which server or resource "
                    + "it names; it was not sent", acknowledge: nil)
        }
        return ProxyDenial(
            error: "blocked", rule: decision.decision.rule, category: decision.decision.category,
            message: decision.decision.message, requestID: decision.id.uuidString,
            hint: "the audit policy blocks this request; it was not sent", acknowledge: nil)
    }

    static func blockedAddress(_ decision: AuditPipeline.Decision, _ refusal: ProxyHandler.AddressRefusal)
        -> ProxyDenial
    {
        ProxyDenial(
            error: "blocked-address", rule: refusal.verdict.rule?.id, category: refusal.verdict.rule?.category,
            message: refusal.verdict.message, requestID: decision.id.uuidString,
            hint: "\(refusal.host) resolves to \(refusal.address), which the audit policy blocks; it was not sent",
            acknowledge: nil)
    }

    static func warning(_ decision: AuditPipeline.Decision) -> ProxyDenial {
        let rule = decision.decision.rule ?? "-"
        return ProxyDenial(
            error: "warning", rule: rule, category: decision.decision.category, message: decision.decision.message,
            requestID: decision.id.uuidString,
            hint: "the audit policy warns about this request; it was not sent. To proceed, send it again with the "
                + "header '\(acknowledgeHeader): \(rule)'",
            acknowledge: Acknowledge(header: acknowledgeHeader, value: rule))
    }

    static func redirectUnavailable(_ decision: AuditPipeline.Decision) -> ProxyDenial {
        ProxyDenial(
            error: "redirect-unavailable", rule: decision.decision.rule, category: decision.decision.category,
            message: decision.decision.message, requestID: decision.id.uuidString,
            hint: "the audit policy redirects this host to \(decision.decision.redirect ?? "-"), which a CONNECT "
                + "tunnel cannot follow; it was not opened", acknowledge: nil)
    }

    static func responseUnavailable(_ decision: AuditPipeline.Decision, isTunnel: Bool) -> ProxyDenial {
        let handler = decision.verdict.response?.handler
        let reason =
            isTunnel
            ? "a CONNECT tunnel cannot carry (the proxy does not see inside TLS); it was not opened"
            : "comes from the Swift handler '\(handler ?? "-")', which only an app that registers it can run; "
                + "audit proxy serves body= and file= responses. It was not sent"
        return ProxyDenial(
            error: "respond-unavailable", rule: decision.decision.rule, category: decision.decision.category,
            message: decision.decision.message, requestID: decision.id.uuidString,
            hint: "the audit policy answers this request locally, which " + reason, acknowledge: nil)
    }

    static func upstream(_ decision: AuditPipeline.Decision, reason: String) -> ProxyDenial {
        ProxyDenial(
            error: "upstream", rule: nil, category: nil, message: reason, requestID: decision.id.uuidString,
            hint: "the proxy could not reach the server", acknowledge: nil)
    }

    static func problem(_ error: String, _ message: String) -> ProxyDenial {
        ProxyDenial(
            error: error, rule: nil, category: nil, message: message, requestID: nil, hint: nil, acknowledge: nil)
    }

    /// The body, as compact JSON with keys in a fixed order.
    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(self) else { return #"{"error":"\#(error)"}"# }
        return String(decoding: data, as: UTF8.self)
    }
}
