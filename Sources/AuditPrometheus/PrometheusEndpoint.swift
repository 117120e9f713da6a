import AuditLocking
import CoreMetrics
import NIOCore
import NIOHTTP1
import NIOPosix
import Prometheus

/// Serves the audit pipeline's metrics in Prometheus's text exposition format at `/metrics`.
///
/// ``bootstrap()`` points swift-metrics at one Prometheus registry for the process; an endpoint
/// then serves that registry for a Prometheus server to scrape. Bootstrap before creating the
/// pipeline, whose metrics are made when it starts.
///
/// ```swift
/// let registry = PrometheusEndpoint.bootstrap()
/// let endpoint = PrometheusEndpoint(registry: registry, host: "127.0.0.1", port: 9464)
/// try await endpoint.start()          // http://127.0.0.1:9464/metrics
/// ```
public final class PrometheusEndpoint: Sendable {
    /// The registry served.
    public let registry: PrometheusCollectorRegistry
    private let host: String
    private let requestedPort: Int
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let channel = Locked<Channel?>(nil)

    /// An endpoint for `registry` on `host`:`port` (0: any free port).
    public init(registry: PrometheusCollectorRegistry, host: String, port: Int) {
        self.registry = registry
        self.host = host
        self.requestedPort = port
    }

    private static let shared = Locked<PrometheusCollectorRegistry?>(nil)

    /// Points swift-metrics at a Prometheus registry, once per process, and returns it (the same
    /// one on later calls).
    public static func bootstrap() -> PrometheusCollectorRegistry {
        shared.withLock { registry in
            if let registry { return registry }
            let made = PrometheusCollectorRegistry()
            var factory = PrometheusMetricsFactory(registry: made)
            // Decisions take microseconds; the default buckets start at 5 ms.
            factory.durationHistogramBuckets["audit_decision_duration_seconds"] = [
                .microseconds(1), .microseconds(2), .microseconds(5), .microseconds(10), .microseconds(25),
                .microseconds(50), .microseconds(100), .microseconds(250), .milliseconds(1), .milliseconds(5),
            ]
            MetricsSystem.bootstrap(factory)
            registry = made
            return made
        }
    }

    /// The port it listens on, once started.
    public var port: Int? { channel.withLock { $0?.localAddress?.port } }

    /// Starts listening.
    public func start() async throws {
        let registry = registry
        let bound = try await ServerBootstrap(group: group)
            .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
            .childChannelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.configureHTTPServerPipeline()
                    try channel.pipeline.syncOperations.addHandler(ScrapeHandler(registry: registry))
                }
            }
            .bind(host: host, port: requestedPort).get()
        channel.withLock { $0 = bound }
    }

    /// Stops listening.
    public func stop() async {
        let bound = channel.withLock { channel in
            defer { channel = nil }
            return channel
        }
        try? await bound?.close()
        try? await group.shutdownGracefully()
    }
}

/// Answers `GET /metrics` with the registry's exposition, anything else with 404.
private final class ScrapeHandler: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    let registry: PrometheusCollectorRegistry

    init(registry: PrometheusCollectorRegistry) {
        self.registry = registry
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(let head) = unwrapInboundIn(data) else { return }
        let path = head.uri.split(separator: "?").first.map(String.init) ?? head.uri
        let isMetrics = head.method == .GET && path == "/metrics"
        let body = isMetrics ? registry.emitToBuffer() : Array("not found\n".utf8)
        var headers: HTTPHeaders = [
            "Content-Type": isMetrics ? "text/plain; version=0.0.4; charset=utf-8" : "text/plain",
            "Content-Length": String(body.count),
        ]
        if !head.isKeepAlive { headers.add(name: "Connection", value: "close") }
        context.write(
            wrapOutboundOut(
                .head(HTTPResponseHead(version: head.version, status: isMetrics ? .ok : .notFound, headers: headers))),
            promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
        let keepAlive = head.isKeepAlive
        context.writeAndFlush(wrapOutboundOut(.end(nil))).assumeIsolated().whenComplete { _ in
            if !keepAlive { context.close(promise: nil) }
        }
    }
}
