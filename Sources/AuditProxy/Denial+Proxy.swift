import AuditPipeline
import Foundation

/// The denials only the proxy gives: an address the policy blocks, an unreachable server, and what
/// it cannot carry out in a tunnel or without the app's handlers.
extension Denial {
    static func blockedAddress(_ decision: AuditPipeline.Decision, _ refusal: ProxyHandler.AddressRefusal) -> Denial {
        Denial(
            error: "blocked-address", rule: refusal.verdict.rule?.id, category: refusal.verdict.rule?.category,
            message: refusal.verdict.message, requestID: decision.id.uuidString,
            hint: "\(refusal.host) resolves to \(refusal.address), which the audit policy blocks; it was not sent",
            acknowledge: nil)
    }

    static func upstream(_ decision: AuditPipeline.Decision, reason: String) -> Denial {
        Denial(
            error: "upstream", rule: nil, category: nil, message: reason, requestID: decision.id.uuidString,
            hint: "the proxy could not reach the server", acknowledge: nil)
    }

    /// Why the proxy cannot carry out a redirect or a local response of `decision` (completing
    /// "which …"): in a CONNECT tunnel it sees nothing inside, and a handler's response needs the app.
    static func proxyUnavailable(_ decision: AuditPipeline.Decision, isTunnel: Bool) -> String {
        if isTunnel { return "a CONNECT tunnel cannot carry (the proxy does not see inside TLS); it was not opened" }
        if decision.verdict.action == .redirect { return "the proxy cannot reach; it was not sent" }
        return handlerOnly(decision, frontEnd: "audit proxy")
    }
}
