// A local HTTP/1.1 server that answers every request with 1 KiB after a fixed delay (1 ms by default): a LAN-like
// round trip for the interception benchmark, so that it measures what a user waiting on a real server feels rather
// than the layer alone. One event-loop thread; keep-alive and pipelining as NIO's server pipeline handles them.
// Usage: latency-server [DELAY-MICROSECONDS]; prints the port it listens on (127.0.0.1), then serves until killed.
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// Answers each request `delay` after its end, with a 1 KiB body.
final class DelayedAnswer: ChannelInboundHandler, Sendable {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundOut = HTTPServerResponsePart

    static let body = ByteBuffer(repeating: UInt8(ascii: "x"), count: 1_024)
    let delay: TimeAmount

    init(delay: TimeAmount) { self.delay = delay }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .end = unwrapInboundIn(data) else { return }
        let bound = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.eventLoop.scheduleTask(in: delay) {
            let context = bound.value
            var headers = HTTPHeaders()
            headers.add(name: "Content-Length", value: "1024")
            headers.add(name: "Content-Type", value: "text/plain")
            let head = HTTPResponseHead(version: .http1_1, status: .ok, headers: headers)
            context.write(NIOAny(HTTPServerResponsePart.head(head)), promise: nil)
            context.write(NIOAny(HTTPServerResponsePart.body(.byteBuffer(Self.body))), promise: nil)
            context.writeAndFlush(NIOAny(HTTPServerResponsePart.end(nil)), promise: nil)
        }
    }
}

let arguments = CommandLine.arguments
let delay = TimeAmount.microseconds(Int64(arguments.count > 1 ? Int(arguments[1]) ?? 1_000 : 1_000))
let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
let channel = try ServerBootstrap(group: group)
    .serverChannelOption(.backlog, value: 256)
    .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
    .childChannelOption(.socketOption(.tcp_nodelay), value: 1)
    .childChannelInitializer { channel in
        channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.configureHTTPServerPipeline()
            try channel.pipeline.syncOperations.addHandler(DelayedAnswer(delay: delay))
        }
    }
    .bind(host: "127.0.0.1", port: 0).wait()
// Written unbuffered: the benchmark reads the port before anything else is printed.
FileHandle.standardOutput.write(Data("\(channel.localAddress?.port ?? 0)\n".utf8))
try channel.closeFuture.wait()
