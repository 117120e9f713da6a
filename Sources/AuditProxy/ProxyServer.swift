import AuditLocking
import AuditPipeline
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// `audit proxy`: a forward HTTP proxy (plain HTTP and CONNECT) on SwiftNIO that hands every request
/// to an ``AuditPipeline`` and carries out its verdict.
///
/// ```swift
/// let pipeline = try AuditPipeline(policy: Policy(directory: "policies"))
/// let proxy = ProxyServer(configuration: ProxyConfiguration(), pipeline: pipeline)
/// try await proxy.start()            // listening on 127.0.0.1:8080
/// // … HTTP_PROXY=http://127.0.0.1:8080 curl http://example.org/ …
/// await proxy.stop()                  // stop accepting, finish what is in flight, flush the log
/// ```
public final class ProxyServer: Sendable {
    /// The settings.
    public let configuration: ProxyConfiguration
    /// The pipeline every request goes through.
    public let pipeline: AuditPipeline

    private let group: MultiThreadedEventLoopGroup
    private let state = Locked(State())
    private let report: @Sendable (String) -> Void

    private struct State {
        var server: Channel?
        var connections: [ObjectIdentifier: Channel] = [:]
        var isStopping = false
    }

    /// A proxy (not yet listening) for `pipeline`; `report` receives one line per problem
    /// (standard error by default), its URLs redacted as the pipeline's records are.
    public init(
        configuration: ProxyConfiguration, pipeline: AuditPipeline,
        report: @escaping @Sendable (String) -> Void = { line in
            FileHandle.standardError.write(Data("audit proxy: \(line)\n".utf8))
        }
    ) {
        self.configuration = configuration
        self.pipeline = pipeline
        let redaction = pipeline.configuration.redaction
        self.report = { line in report(redaction.redact(text: line)) }
        group = MultiThreadedEventLoopGroup(numberOfThreads: max(1, configuration.threads))
    }

    /// The port the proxy listens on (the one chosen when the configuration asked for 0), or nil
    /// before ``start()``.
    public var port: Int? { state.withLock { $0.server?.localAddress?.port } }

    /// Starts listening.
    ///
    /// - Throws: when the address cannot be bound.
    public func start() async throws {
        let services = ProxyServices(pipeline: pipeline, configuration: configuration, report: report)
        let configuration = configuration
        let flushRounds = FlushRounds(group)
        let server = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.backlog, value: 1_024)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .childChannelOption(ChannelOptions.maxMessagesPerRead, value: 16)
            .childChannelInitializer { [self] channel in
                guard admit(channel) else {
                    return channel.eventLoop.makeCompletedFuture {
                        try channel.pipeline.syncOperations.addHandler(BusyResponder(report: services.report))
                    }
                }
                return channel.eventLoop.makeCompletedFuture {
                    if let flush = flushRounds.handler(on: channel.eventLoop) {
                        try channel.pipeline.syncOperations.addHandler(flush)
                    }
                    try ProxyHandler.install(on: channel, services: services)
                }
            }
            .bind(host: configuration.host, port: configuration.port)
            .get()
        state.withLock { $0.server = server }
    }

    /// Counts `channel` in, unless the proxy is at its connection limit or stopping.
    private func admit(_ channel: Channel) -> Bool {
        let identifier = ObjectIdentifier(channel)
        let isAdmitted = state.withLock { state -> Bool in
            guard !state.isStopping, state.connections.count < configuration.maximumConnections else { return false }
            state.connections[identifier] = channel
            return true
        }
        if isAdmitted {
            channel.closeFuture.whenComplete { [self] _ in
                state.withLock { _ = $0.connections.removeValue(forKey: identifier) }
            }
        }
        return isAdmitted
    }

    /// Client connections open now.
    public var connectionCount: Int { state.withLock { $0.connections.count } }

    /// Stops gracefully: stops accepting, waits for the requests and tunnels in flight (at most
    /// ``ProxyConfiguration/drainTimeout``), closes every connection, and shuts the pipeline down
    /// (which writes and syncs the log).
    public func stop() async {
        let server = state.withLock { state -> Channel? in
            state.isStopping = true
            return state.server
        }
        try? await server?.close()
        let deadline = ContinuousClock.now + configuration.drainTimeout
        while pipeline.inFlightCount > 0, ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(20))
        }
        // What is still open is closed; each exchange and tunnel writes its record as it closes.
        let open = state.withLock { Array($0.connections.values) }
        for channel in open { try? await channel.close() }
        try? await pipeline.shutdown()
        try? await group.shutdownGracefully()
    }
}

/// Answers a connection over the limit with 503 and closes it.
private final class BusyResponder: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let report: @Sendable (String) -> Void

    init(report: @escaping @Sendable (String) -> Void) { self.report = report }

    func handlerAdded(context: ChannelHandlerContext) {
        guard context.channel.isActive else { return }
        answer(context)
    }

    func channelActive(context: ChannelHandlerContext) {
        answer(context)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    private func answer(_ context: ChannelHandlerContext) {
        report("\(context.remoteAddressText): 503 connection limit reached")
        ProxyResponse.answerAndClose(
            context, status: "503 Service Unavailable",
            denial: .problem("busy", "the proxy has as many connections as it takes; try again later"))
    }
}
