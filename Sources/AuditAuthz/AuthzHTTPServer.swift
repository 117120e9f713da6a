import AuditLocking
import AuditPipeline
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// The HTTP listener of `audit authz`: answers the checks of Envoy's HTTP `ext_authz` service,
/// nginx `auth_request`, Caddy `forward_auth` and Traefik ForwardAuth, each decided by an
/// ``AuthzDecider``.
///
/// ```swift
/// let server = AuthzHTTPServer(configuration: AuthzConfiguration(), decider: AuthzDecider(pipeline: pipeline))
/// try await server.start()     // listening on 127.0.0.1:9191
/// await server.stop()          // stop accepting, answer what is in flight, flush the log
/// ```
public final class AuthzHTTPServer: Sendable {
    /// The settings.
    public let configuration: AuthzConfiguration
    /// Decides every check.
    public let decider: AuthzDecider

    private let group: MultiThreadedEventLoopGroup
    private let state = Locked(State())
    /// Set when a stop begins: checks that come after it are answered 503 and not decided.
    private let isStopping = Atomic<Bool>(false)

    private struct State {
        var server: Channel?
        var connections: [ObjectIdentifier: Channel] = [:]
    }

    /// A listener (not yet listening) whose checks `decider` decides.
    public init(configuration: AuthzConfiguration, decider: AuthzDecider) {
        self.configuration = configuration
        self.decider = decider
        group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, configuration.threads))
    }

    /// The port it listens on (the one chosen when the configuration asked for 0), or nil before
    /// ``start()``.
    public var port: Int? { state.withLock { $0.server?.localAddress?.port } }

    /// Starts listening.
    ///
    /// - Throws: when the address cannot be bound.
    public func start() async throws {
        let decider = decider
        let contracts = configuration.contracts
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 1_024)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelInitializer { [self] channel in
                track(channel)
                return channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline(withErrorHandling: true)
                    try channel.pipeline.syncOperations.addHandler(
                        AuthzHTTPHandler(decider: decider, contracts: contracts, server: self))
                }
            }
            .bind(host: configuration.host, port: configuration.port)
            .get()
        state.withLock { $0.server = server }
    }

    private func track(_ channel: Channel) {
        let identifier = ObjectIdentifier(channel)
        state.withLock { $0.connections[identifier] = channel }
        channel.closeFuture.whenComplete { [self] _ in
            state.withLock { _ = $0.connections.removeValue(forKey: identifier) }
        }
    }

    /// Whether a stop has begun.
    var stopping: Bool { isStopping.load(ordering: .acquiring) }

    /// Stops gracefully: stops accepting connections and checks (a check that comes on an open
    /// connection now is answered 503 with `Connection: close`, not decided), waits for the checks
    /// in flight (at most ``AuthzConfiguration/drainTimeout``), and closes every connection. The
    /// pipeline is its owner's to shut down (a gRPC listener may share it).
    public func stop() async {
        isStopping.store(true, ordering: .releasing)
        try? await state.withLock { $0.server }?.close()
        let deadline = ContinuousClock.now + configuration.drainTimeout
        while decider.gate.count > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(10))
        }
        let open = state.withLock { Array($0.connections.values) }
        for channel in open { try? await channel.close() }
        try? await group.shutdownGracefully()
    }
}

/// One gateway connection: each check request is decided when its head has come (a body, if any,
/// is read and ignored) and answered in order.
final class AuthzHTTPHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    private let decider: AuthzDecider
    private let contracts: HTTPContracts
    private let server: AuthzHTTPServer
    private var head: HTTPRequestHead?

    init(decider: AuthzDecider, contracts: HTTPContracts, server: AuthzHTTPServer) {
        self.decider = decider
        self.contracts = contracts
        self.server = server
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            self.head = head
        case .body:
            break
        case .end:
            guard let head else { return }
            self.head = nil
            guard !server.stopping else {
                return answer(AuthzDecider.stopping, keepAlive: false, context: context)
            }
            answer(
                decider.decide(contracts.check(head, receivedAt: context.channel.localAddress)),
                keepAlive: head.isKeepAlive,
                context: context)
        }
    }

    private func answer(_ answer: AuthzAnswer, keepAlive: Bool, context: ChannelHandlerContext) {
        var headers = HTTPHeaders(answer.headers.map { ($0.name, $0.value) })
        headers.replaceOrAdd(name: "Content-Length", value: String(answer.body.count))
        if !keepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
        let head = HTTPResponseHead(
            version: .http1_1, status: HTTPResponseStatus(statusCode: answer.status), headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        if !answer.body.isEmpty {
            context.write(
                wrapOutboundOut(.body(.byteBuffer(context.channel.allocator.buffer(bytes: answer.body)))), promise: nil)
        }
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if !keepAlive { written.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
    }
}
