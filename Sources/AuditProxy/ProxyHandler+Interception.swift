import AuditPipeline
import AuditPolicy
import NIOCore
import NIOHTTP1

#if TLSInterception
    import AuditTLS
    import NIOSSL
#endif

/// Tunnels whose TLS the proxy terminates (`--intercept-tls`), and TLS to servers.
extension ProxyHandler {
    /// Whether the CONNECT to `target`, admitted under `policy`, is intercepted rather than spliced.
    func intercepts(_ target: ProxyTarget, policy: Policy) -> Bool {
        #if TLSInterception
            configuration.tlsInterception?.intercepts(target, policy: policy) ?? false
        #else
            false
        #endif
    }

    /// Answers 200 to the CONNECT, then terminates the client's TLS with a certificate for the
    /// CONNECT's host and serves the requests inside with a handler of their own, which records
    /// the CONNECT when the tunnel closes. Takes the client connection over from this handler.
    func intercept(_ exchange: Exchange, context: ChannelHandlerContext) {
        #if TLSInterception
            guard let settings = configuration.tlsInterception else { return context.close(promise: nil) }
            let tlsContext: NIOSSLContext
            do {
                tlsContext = try settings.leaves.context(for: exchange.target.host)
            } catch {
                services.value.report("\(context.remoteAddressText): 502 CONNECT \(error)")
                finish(exchange, kind: .failure, error: "\(error)")
                return writeProblem(
                    .badGateway, .upstream(exchange.decision, reason: "\(error)"), close: true, context: context)
            }
            let head = HTTPResponseHead(version: exchange.version, status: .ok, headers: ["Content-Length": "0"])
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
            var target = exchange.target
            target.isSecure = true
            var opened = exchange
            opened.status = 200
            let (http, inner) = Self.makeHandlers(
                services: services, tunnel: InterceptedTunnel(target: target, exchange: opened))
            do {
                let sync = context.pipeline.syncOperations
                try sync.addHandler(TLSRecordCheck())
                try sync.addHandler(NIOSSLServerHandler(context: tlsContext))
                try Self.add(http, inner, to: sync)
                removeHTTPHandlers(context: context)
                context.channel.read()
            } catch {
                inner.finishTunnel(failure: "cannot set up the tunnel: \(error)")
                context.close(promise: nil)
            }
        #else
            context.close(promise: nil)
        #endif
    }

    /// Records the intercepted tunnel this handler serves: as a tunnel, or as failed for `failure`
    /// (the first call counts: a request is finished once).
    func finishTunnel(failure: String? = nil) {
        guard let tunnel else { return }
        tunnel.exchange.audited.finish(
            Self.outcome(of: tunnel.exchange, kind: failure == nil ? .tunnel : .failure, error: failure))
    }

    /// What went wrong in an intercepted tunnel before any request, for the CONNECT's record: the
    /// client's TLS handshake failed (with the hint naming `audit env`), or it sent no TLS at all.
    /// Nil for other errors.
    static func tunnelFailure(_ error: any Error, host: String) -> String? {
        if let notTLS = error as? TLSRecordCheck.NotTLS { return notTLS.description }
        #if TLSInterception
            if TLSFailure.isHandshakeFailure(error) { return TLSFailure.client(error, host: host) }
        #endif
        return nil
    }

    /// A CONNECT inside an intercepted tunnel is refused with 400.
    func refuseNestedTunnel(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        badRequest("a CONNECT inside an intercepted tunnel is not taken (got CONNECT \(head.uri))", context: context)
    }

    /// Puts a TLS client handler first on a connection to a secure `target`: SNI is its host (none
    /// for an address), the certificate verified against the roots of the interception settings,
    /// the name checked against the host, or the address connected to.
    static func addUpstreamTLS(
        to sync: ChannelPipeline.SynchronousOperations, target: ProxyTarget, services: ServicesBox
    ) throws {
        #if TLSInterception
            guard let settings = services.value.configuration.tlsInterception else {
                throw ProxyTLSUnavailable()
            }
            let serverName = IPAddress.bytes(of: target.host) == nil ? target.host : nil
            try sync.addHandler(NIOSSLClientHandler(context: settings.upstreamContext, serverHostname: serverName))
        #else
            throw ProxyTLSUnavailable()
        #endif
    }

    /// Hands `then` the reason a server connection failed: `reason`, or for a certificate that did not
    /// verify, why (``CertificateDiagnosis``: expired, self-signed, an untrusted issuer), found on
    /// this connection's event loop.
    func explainUpstreamFailure(
        _ error: any Error, of upstream: Upstream, reason: String, then: @escaping (String) -> Void
    ) {
        #if TLSInterception
            let target = upstream.target
            guard target.isSecure, TLSFailure.isVerificationFailure(error),
                let address = upstream.channel.remoteAddress, let context
            else { return then(reason) }
            CertificateDiagnosis.reason(
                address: address, host: target.host, authority: target.authority, eventLoop: context.eventLoop
            ).assumeIsolated().whenSuccess(then)
        #else
            then(reason)
        #endif
    }

    /// Why a server connection failed, in words: a TLS failure named, else the error.
    static func upstreamFailure(_ error: any Error, target: ProxyTarget) -> String {
        #if TLSInterception
            if target.isSecure { return TLSFailure.upstream(error, authority: target.authority) }
        #endif
        return "the server connection failed: \(SocketErrorReason.of(error))"
    }
}

/// A server reached over TLS by a proxy built without TLS interception, or not configured for it.
struct ProxyTLSUnavailable: Error, CustomStringConvertible {
    var description: String { "TLS to servers needs --intercept-tls" }
}
