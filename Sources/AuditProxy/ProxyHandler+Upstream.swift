import AuditPolicy
import NIOCore
import NIOHTTP1

/// Connections to servers.
extension ProxyHandler {

    /// Connects to `target` at the addresses its host resolves to once, checked against `policy`
    /// for `request` (``resolveChecked(_:request:policy:context:then:)``).
    func connect(
        to target: ProxyTarget, request: AuditRequest, policy: Policy, context: ChannelHandlerContext,
        then: @escaping (Result<Upstream, Error>) -> Void
    ) {
        resolveChecked(target, request: request, policy: policy, context: context) { [self] resolved in
            switch resolved {
            case .success(let addresses):
                guard let context = self.context else { return }
                connect(to: target, addresses: addresses, context: context, then: then)
            case .failure(let error):
                then(.failure(error))
            }
        }
    }

    func connect(
        to target: ProxyTarget, addresses: [SocketAddress], context: ChannelHandlerContext,
        then: @escaping (Result<Upstream, Error>) -> Void
    ) {
        let services = self.services
        services.value.upstreams.connect(target, addresses, context.eventLoop) { channel in
            channel.eventLoop.makeCompletedFuture {
                let sync = channel.pipeline.syncOperations
                try Self.addUpstreamHTTP(to: sync, target: target, services: services)
                try sync.addHandler(NIOHTTPRequestHeadersValidator())
                try sync.addHandler(UpstreamHandler())
            }
        }
        .assumeIsolated()
        .whenComplete { result in
            then(
                result.flatMap { channel in
                    Result {
                        Upstream(
                            target: target, channel: channel,
                            handler: try channel.pipeline.syncOperations.handler(type: UpstreamHandler.self))
                    }
                })
        }
    }

    /// Adds what a server connection speaks: TLS to a secure target, the request encoder and the
    /// response decoder (informational responses passed on).
    static func addUpstreamHTTP(
        to sync: ChannelPipeline.SynchronousOperations, target: ProxyTarget, services: ServicesBox
    ) throws {
        if target.isSecure { try addUpstreamTLS(to: sync, target: target, services: services) }
        // The proxy sets the framing headers itself (transfer codings as the client sent them), and
        // frames chunks itself when `chunked` follows other codings.
        var encoding = HTTPRequestEncoder.Configuration()
        encoding.automaticallySetFramingHeaders = false
        try sync.addHandler(HTTPRequestEncoder(configuration: encoding))
        try sync.addHandler(
            ByteToMessageHandler(
                HTTPResponseDecoder(leftOverBytesStrategy: .forwardBytes, informationalResponseStrategy: .forward)))
    }
}
