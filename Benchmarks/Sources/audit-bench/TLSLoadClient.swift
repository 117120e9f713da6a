import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix
import NIOSSL
import NIOTLS

/// A load client that speaks CONNECT and TLS, as an HTTPS client behind a proxy does: it opens a
/// tunnel through the proxy (or connects straight to the server), makes a TLS handshake inside it,
/// then sends keep-alive GET requests one after the other, timing each.
final class TLSLoadClient: Sendable {
    let group: MultiThreadedEventLoopGroup
    let context: NIOSSLContext

    /// A client on `threads` event loops trusting the PEM roots in `caFiles`.
    init(threads: Int, caFiles: [String]) throws {
        group = MultiThreadedEventLoopGroup(numberOfThreads: threads)
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.trustRoots = .certificates(try caFiles.flatMap { try NIOSSLCertificate.fromPEMFile($0) })
        configuration.applicationProtocols = ["http/1.1"]
        context = try NIOSSLContext(configuration: configuration)
    }

    func shutdown() { try? group.syncShutdownGracefully() }

    /// A TLS connection to `host:port` (through the proxy on `proxyPort` when given) with the HTTP/1.1
    /// client handlers on it; `serverName` is the SNI (nil for an address). Returns the channel and
    /// the time from the TCP connect's start to the end of the TLS handshake.
    func open(proxyPort: Int?, host: String, port: Int, serverName: String?) async throws -> (Channel, Duration) {
        let started = ContinuousClock.now
        let channel = try await ClientBootstrap(group: group)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .connect(host: "127.0.0.1", port: proxyPort ?? port).get()
        if proxyPort != nil {
            let answered = channel.eventLoop.makePromise(of: Void.self)
            try await channel.eventLoop.submit {
                try channel.pipeline.syncOperations.addHandler(ConnectAnswerReader(promise: answered))
            }.get()
            let authority = "\(host):\(port)"
            try await channel.writeAndFlush(
                ByteBuffer(string: "CONNECT \(authority) HTTP/1.1\r\nHost: \(authority)\r\n\r\n")
            ).get()
            try await answered.futureResult.get()
        }
        let handshake = channel.eventLoop.makePromise(of: Void.self)
        let context = context
        try await channel.eventLoop.submit {
            let sync = channel.pipeline.syncOperations
            try sync.addHandler(NIOSSLClientHandler(context: context, serverHostname: serverName))
            try sync.addHandler(HandshakeWaiter(promise: handshake))
            try sync.addHTTPClientHandlers()
        }.get()
        try await handshake.futureResult.get()
        return (channel, ContinuousClock.now - started)
    }

    /// Sends GET `path` for `host` on `channel` one request at a time until `deadline`; returns each
    /// request's latency in nanoseconds.
    func loop(on channel: Channel, host: String, path: String, until deadline: NIODeadline) async throws -> [UInt64] {
        let done = channel.eventLoop.makePromise(of: [UInt64].self)
        try await channel.eventLoop.submit {
            let loop = RequestLoop(host: host, path: path, deadline: deadline, promise: done)
            try channel.pipeline.syncOperations.addHandler(loop)
            loop.sendNext()
        }.get()
        return try await done.futureResult.get()
    }
}

/// Reads the proxy's answer to a CONNECT, fulfils the promise on a 200, and removes itself.
private final class ConnectAnswerReader: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    private var received = ByteBuffer()
    private let promise: EventLoopPromise<Void>

    init(promise: EventLoopPromise<Void>) { self.promise = promise }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        var buffer = unwrapInboundIn(data)
        received.writeBuffer(&buffer)
        let text = String(buffer: received)
        guard text.contains("\r\n\r\n") else { return }
        if text.hasPrefix("HTTP/1.1 200") || text.hasPrefix("HTTP/1.0 200") {
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
            promise.succeed()
        } else {
            promise.fail(BenchError("the proxy refused the CONNECT: \(text.prefix(200))"))
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { promise.fail(error) }
    func channelInactive(context: ChannelHandlerContext) { promise.fail(BenchError("the proxy closed the tunnel")) }
}

/// Fulfils the promise when the TLS handshake completes.
private final class HandshakeWaiter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    private let promise: EventLoopPromise<Void>
    init(promise: EventLoopPromise<Void>) { self.promise = promise }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            promise.succeed()
            context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { promise.fail(error) }
    func channelInactive(context: ChannelHandlerContext) { promise.fail(BenchError("closed during the handshake")) }
}

/// Sends keep-alive GETs one at a time, timing each, until the deadline.
private final class RequestLoop: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundOut = HTTPClientRequestPart

    private let head: HTTPRequestHead
    private let deadline: NIODeadline
    private let promise: EventLoopPromise<[UInt64]>
    private var context: ChannelHandlerContext?
    private var sentAt = NIODeadline.now()
    private var latencies: [UInt64] = []
    private var status: UInt = 0

    init(host: String, path: String, deadline: NIODeadline, promise: EventLoopPromise<[UInt64]>) {
        head = HTTPRequestHead(version: .http1_1, method: .GET, uri: path, headers: ["Host": host])
        self.deadline = deadline
        self.promise = promise
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func sendNext() {
        guard let context else { return }
        sentAt = .now()
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let response): status = response.status.code
        case .body: break
        case .end:
            guard status == 200 else {
                promise.fail(BenchError("status \(status)"))
                return
            }
            let now = NIODeadline.now()
            latencies.append(UInt64(max(0, (now - sentAt).nanoseconds)))
            if now < deadline { sendNext() } else { promise.succeed(latencies) }
        }
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) { promise.fail(error) }
    func channelInactive(context: ChannelHandlerContext) { promise.fail(BenchError("the connection closed")) }
}
