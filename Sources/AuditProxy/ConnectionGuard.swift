import NIOCore

/// The first handler of a client connection: closes connections that sit idle between requests,
/// and answers 408 to a request head that starts but does not finish in time (a slow-loris client).
///
/// ``ProxyHandler`` tells it when a head has arrived and when the connection waits for the next one.
final class ConnectionGuard: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundOut = ByteBuffer

    private let headerTimeout: TimeAmount
    private let idleTimeout: TimeAmount
    private let report: @Sendable (String) -> Void
    private var context: ChannelHandlerContext?
    private var isWaitingForHead = true
    private var hasHeadBytes = false
    private var timer: Scheduled<Void>?

    init(headerTimeout: Duration, idleTimeout: Duration, report: @escaping @Sendable (String) -> Void) {
        self.headerTimeout = TimeAmount(headerTimeout)
        self.idleTimeout = TimeAmount(idleTimeout)
        self.report = report
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        if context.channel.isActive { startTimer(idleTimeout, onExpiry: closeIdle) }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        self.context = nil
    }

    func channelActive(context: ChannelHandlerContext) {
        startTimer(idleTimeout, onExpiry: closeIdle)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if isWaitingForHead, !hasHeadBytes {
            hasHeadBytes = true
            startTimer(headerTimeout, onExpiry: answerTimeout)
        }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        timer?.cancel()
        timer = nil
        context.fireChannelInactive()
    }

    /// A whole request head arrived: no deadline until the connection waits again.
    func headReceived() {
        isWaitingForHead = false
        hasHeadBytes = false
        timer?.cancel()
        timer = nil
    }

    /// The exchange is over: the connection waits for the next head, for at most the idle timeout.
    func waitForNextHead() {
        isWaitingForHead = true
        hasHeadBytes = false
        startTimer(idleTimeout, onExpiry: closeIdle)
    }

    private func startTimer(_ delay: TimeAmount, onExpiry: @escaping (ConnectionGuard) -> Void) {
        timer?.cancel()
        guard let context else { return }
        timer = context.eventLoop.assumeIsolated().scheduleTask(in: delay) { [self] in onExpiry(self) }
    }

    private func closeIdle(_ this: ConnectionGuard) {
        guard isWaitingForHead, !hasHeadBytes else { return }
        context?.close(promise: nil)
    }

    private func answerTimeout(_ this: ConnectionGuard) {
        guard isWaitingForHead, let context else { return }
        report("\(context.remoteAddressText): 408 request head not complete within \(headerTimeout.seconds) s")
        let response = ProxyResponse.raw(
            status: "408 Request Timeout",
            denial: .problem("timeout", "the request head did not arrive in full within \(headerTimeout.seconds) s"))
        context.writeAndFlush(wrapOutboundOut(response)).assumeIsolated().whenComplete { _ in
            context.close(promise: nil)
        }
    }
}

extension TimeAmount {
    init(_ duration: Duration) {
        let (seconds, attoseconds) = duration.components
        self = .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }

    /// Whole and fractional seconds, for messages.
    var seconds: String {
        let value = Double(nanoseconds) / 1e9
        return value == value.rounded() ? String(Int(value)) : String(value)
    }
}

extension ChannelHandlerContext {
    /// The client's address for log lines.
    var remoteAddressText: String {
        guard let address = channel.remoteAddress else { return "-" }
        return "\(address.ipAddress ?? "-"):\(address.port ?? 0)"
    }
}

/// Responses the proxy writes itself.
enum ProxyResponse {
    /// A complete HTTP/1.1 response with a JSON body, as raw bytes that close the connection (for
    /// use where no HTTP encoder is in the way).
    static func raw(status: String, denial: ProxyDenial) -> ByteBuffer {
        let body = denial.json
        return ByteBuffer(
            string: "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
                + "Connection: close\r\n\r\n\(body)")
    }
}
