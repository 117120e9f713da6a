import AuditPipeline
import AuditPolicy
import NIOCore
import NIOPosix

/// The addresses a request goes to: resolved once, decided, connected to.
extension ProxyHandler {
    /// A block rule matches the request sent to one of its host's addresses.
    struct AddressRefusal: Error, CustomStringConvertible {
        let host: String
        let address: String
        let verdict: Verdict
        var description: String {
            "\(host) resolves to \(address), which \(verdict.rule?.id ?? "the policy") blocks"
        }
    }

    /// Resolves `target`'s host once, without blocking the event loop, and refuses when a block rule matches
    /// `request` sent to any of its addresses (so a rule on an IP address holds for every name that
    /// resolves to it); otherwise hands back the addresses, which are the ones connected to.
    func resolveChecked(
        _ target: ProxyTarget, request: AuditRequest, policy: Policy, context: ChannelHandlerContext,
        then: @escaping (Result<[SocketAddress], any Error>) -> Void
    ) {
        let host = target.host
        let pipeline = self.pipeline
        upstreams.resolve(host, target.port, context.eventLoop).flatMapThrowing { addresses in
            if let refusal = Self.addressRefusal(
                of: request, host: host, addresses: addresses.compactMap(\.ipAddress), pipeline: pipeline,
                policy: policy)
            {
                throw refusal
            }
            return addresses
        }.assumeIsolated().whenComplete(then)
    }

    /// The refusal when a block rule matches `request` sent to one of `addresses` (those of
    /// `host`); nil when none does. The host itself is skipped: the request was decided on it.
    static func addressRefusal(
        of request: AuditRequest, host: String, addresses: [String], pipeline: AuditPipeline, policy: Policy
    ) -> AddressRefusal? {
        let others = addresses.filter { $0 != host }
        guard !others.isEmpty, let canonical = try? CanonicalURL(request.url) else { return nil }
        let port = canonical.port.map { ":\($0)" } ?? ""
        // The Host header names the host, not the address: the request was decided with it.
        let headers = request.headers.filter { !$0.isHost }
        for address in others {
            let name = address.utf8.contains(UInt8(ascii: ":")) ? "[\(address)]" : address
            let hop = AuditRequest(
                method: request.method, url: "\(canonical.scheme)://\(name)\(port)\(canonical.requestTarget)",
                headers: headers)
            if let verdict = pipeline.hopRefusal(hop, policy: policy) {
                return AddressRefusal(host: host, address: address, verdict: verdict)
            }
        }
        return nil
    }
}
