import NIOCore
import NIOPosix

/// How the proxy reaches servers: resolves a host once, then connects to the addresses found.
///
/// ``sockets`` is what `audit proxy` uses (`getaddrinfo` off the event loop, then TCP). Tests put
/// in-memory channels in its place, to drive a connection through every framing without a socket.
struct UpstreamConnector: Sendable {
    /// The addresses of `host` at `port`, found without blocking `eventLoop`.
    var resolve: @Sendable (_ host: String, _ port: Int, _ eventLoop: any EventLoop) -> EventLoopFuture<[SocketAddress]>
    /// A connection on `eventLoop` to `target`, at one of `addresses` (no second resolution), with
    /// `initializer` run on its channel before it connects.
    var connect:
        @Sendable (
            _ target: ProxyTarget, _ addresses: [SocketAddress], _ eventLoop: any EventLoop,
            _ initializer: @escaping @Sendable (any Channel) -> EventLoopFuture<Void>
        ) -> EventLoopFuture<any Channel>

    /// Resolves with `getaddrinfo` on NIO's thread pool, and connects with TCP (no delay, a
    /// ten-second connect timeout).
    static let sockets = UpstreamConnector(
        resolve: { host, port, eventLoop in
            NIOThreadPool.singleton.runIfActive(eventLoop: eventLoop) { () throws -> [SocketAddress] in
                try HostResolution.addresses(of: host, port: port)
            }
        },
        connect: { target, addresses, eventLoop, initializer in
            ClientBootstrap(group: eventLoop)
                .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
                .connectTimeout(.seconds(10))
                .resolver(FixedResolver(addresses: addresses, eventLoop: eventLoop))
                .channelInitializer(initializer)
                .connect(host: target.host, port: target.port)
        })
}
