import NIOCore

/// A CONNECT tunnel whose TLS the proxy terminated, as the handler of the requests inside it sees
/// it: the origin every request must name, and the CONNECT's exchange, recorded when the tunnel
/// closes with the bytes of the requests inside it.
struct InterceptedTunnel {
    /// The CONNECT's host and port (``ProxyTarget/isSecure``).
    let target: ProxyTarget
    /// The CONNECT's exchange.
    var exchange: ProxyConnection.Exchange
    /// A `Host` header value found to name the tunnel's origin (requests on one tunnel repeat it).
    var namingHost: String?
    /// Whether a request inside was decided (the tunnel is then counted as intercepted).
    var hasRequests = false
    /// `https://HOST[:PORT]`, what an origin-form request target follows.
    private let origin: String

    init(target: ProxyTarget, exchange: ProxyConnection.Exchange) {
        self.target = target
        self.exchange = exchange
        origin = String(target.tunnelURL.dropLast())
    }

    /// The absolute URL of a request target sent inside the tunnel: origin form (`/path?query`) on the
    /// tunnel's origin, or absolute form naming that origin; nil for anything else (`*`, another
    /// origin, another scheme).
    func requestURL(for uri: String) -> String? {
        if uri.utf8.first == UInt8(ascii: "/") { return origin + uri }
        guard let named = ProxyTarget(url: uri, allowsTLS: true), named.isSecure, named.host == target.host,
            named.port == target.port
        else { return nil }
        return uri
    }
}

/// The first handler of an intercepted tunnel: lets it go on only if the client's first byte
/// starts a TLS handshake record (22), so that no plain request passes through a tunnel the proxy
/// expects TLS in. Removes itself after the first byte.
final class TLSRecordCheck: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// What the client sent instead of TLS.
    struct NotTLS: Error, CustomStringConvertible {
        let firstByte: UInt8
        var description: String {
            let shown = (0x20..<0x7f).contains(firstByte) ? " ('\(Character(UnicodeScalar(firstByte)))')" : ""
            return "the client sent no TLS handshake in the tunnel (first byte 0x"
                + String(firstByte, radix: 16, uppercase: true) + shown + ")"
        }
    }

    private var isChecked = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        guard !isChecked, let first = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self) else {
            context.fireChannelRead(data)
            return
        }
        isChecked = true
        guard first == 22 else {
            context.fireErrorCaught(NotTLS(firstByte: first))
            return
        }
        context.fireChannelRead(data)
        context.pipeline.syncOperations.removeHandler(context: context, promise: nil)
    }
}
