import AuditPipeline
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
    /// Since when the connection waits for a head (nil while a request is under way).
    private var waitingSince: NIODeadline?
    /// When the first bytes of the awaited head came (nil before any).
    private var headStartedAt: NIODeadline?
    /// Checks the deadlines a few times per timeout: no timer is set or cancelled per request.
    private var check: Scheduled<Void>?
    private let checkInterval: TimeAmount

    init(headerTimeout: Duration, idleTimeout: Duration, report: @escaping @Sendable (String) -> Void) {
        self.headerTimeout = TimeAmount(headerTimeout)
        self.idleTimeout = TimeAmount(idleTimeout)
        self.report = report
        let shorter = min(self.headerTimeout, self.idleTimeout)
        checkInterval = max(TimeAmount.milliseconds(20), .nanoseconds(shorter.nanoseconds / 5))
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        waitingSince = .now()
        scheduleCheck()
    }

    private func scheduleCheck() {
        guard let context else { return }
        check = context.eventLoop.assumeIsolated().scheduleTask(in: checkInterval) { [self] in
            checkDeadlines()
            if check != nil { scheduleCheck() }
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        check?.cancel()
        check = nil
        self.context = nil
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if waitingSince != nil, headStartedAt == nil { headStartedAt = .now() }
        context.fireChannelRead(data)
    }

    func channelInactive(context: ChannelHandlerContext) {
        check?.cancel()
        check = nil
        context.fireChannelInactive()
    }

    /// A whole request head arrived: no deadline until the connection waits again.
    func headReceived() {
        waitingSince = nil
        headStartedAt = nil
    }

    /// The exchange is over: the connection waits for the next head, for at most the idle timeout.
    func waitForNextHead() {
        waitingSince = .now()
        headStartedAt = nil
    }

    private func checkDeadlines() {
        guard let context, let waitingSince else { return }
        let now = NIODeadline.now()
        if let headStartedAt {
            if now - headStartedAt >= headerTimeout { answerTimeout(context) }
        } else if now - waitingSince >= idleTimeout {
            check = nil
            context.close(promise: nil)
        }
    }

    private func answerTimeout(_ context: ChannelHandlerContext) {
        waitingSince = nil
        check?.cancel()
        check = nil
        report("\(context.remoteAddressText): 408 request head not complete within \(headerTimeout.seconds) s")
        ProxyResponse.answerAndClose(
            context, status: "408 Request Timeout",
            denial: .problem("timeout", "the request head did not arrive in full within \(headerTimeout.seconds) s"))
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
    /// Writes a complete HTTP/1.1 response with a JSON body as raw bytes from `context` (a handler
    /// with no HTTP encoder between it and the socket), then closes the connection.
    static func answerAndClose(_ context: ChannelHandlerContext, status: String, denial: Denial) {
        let body = denial.json
        let response = ByteBuffer(
            string: "HTTP/1.1 \(status)\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n"
                + "Connection: close\r\n\r\n\(body)")
        context.writeAndFlush(NIOAny(response)).assumeIsolated().whenComplete { _ in context.close(promise: nil) }
    }
}
