import NIOCore
import NIOHTTP1

/// The last handler of an upstream connection: hands the server's response parts to the
/// ``ProxyHandler`` of the client connection it serves, and reads only while that client can take
/// more.
final class UpstreamHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias OutboundIn = HTTPClientRequestPart
    typealias OutboundOut = HTTPClientRequestPart

    /// The client connection's handler; set once the connection is made, on the same event loop.
    var owner: ProxyHandler?
    private var context: ChannelHandlerContext?
    private var pendingRead = false

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        owner?.upstreamRead(unwrapInboundIn(data), from: self)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        owner?.upstreamReadComplete(from: self)
    }

    func channelInactive(context: ChannelHandlerContext) {
        owner?.upstreamClosed(self, error: nil)
        owner = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        owner?.upstreamClosed(self, error: error)
        owner = nil
        context.close(promise: nil)
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { owner?.upstreamBecameWritable(self) }
        context.fireChannelWritabilityChanged()
    }

    func read(context: ChannelHandlerContext) {
        if owner?.isClientWritable ?? true {
            context.read()
        } else {
            pendingRead = true
        }
    }

    /// The client can take more: read again if a read was held back.
    func resumeReading() {
        guard pendingRead, let context else { return }
        pendingRead = false
        context.read()
    }

    /// Whether the server connection can take more without queueing.
    var isWritable: Bool { context?.channel.isWritable ?? false }

    func send(_ part: HTTPClientRequestPart, flush: Bool = false) {
        guard let context else { return }
        if flush {
            context.writeAndFlush(wrapOutboundOut(part), promise: nil)
        } else {
            context.write(wrapOutboundOut(part), promise: nil)
        }
    }

    func flush() {
        context?.flush()
    }
}
