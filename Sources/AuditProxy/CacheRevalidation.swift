import AuditCache
import AuditPolicy
import AuditReport
import NIOCore
import NIOHTTP1

/// Reads the server's answer to a request the proxy sent on its own, in the background, for a
/// response it served stale (`stale-while-revalidate`), and hands it to the cache's fill: a 304
/// refreshes the stored response, another answer replaces it. Its connection closes after the one
/// answer, or after ``CacheRevalidation/timeLimit``.
final class CacheRevalidationHandler: ChannelInboundHandler {
    typealias InboundIn = HTTPClientResponsePart

    private let fill: CacheFill
    private var writer: CacheEntryWriter?

    init(fill: CacheFill) {
        self.fill = fill
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head) where head.status.code / 100 == 1:
            break
        case .head(let head):
            let headers = head.headers.snapshot
            writer = fill.answeredInBackground(status: Int(head.status.code), headers: headers)
        case .body(let buffer):
            writer?.append(buffer.readableBytesView)
        case .end:
            writer?.commit()
            writer = nil
            fill.finishWithoutStoring()
            context.close(promise: nil)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        // An answer cut short is not stored.
        writer?.abandon()
        fill.finishWithoutStoring()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        context.close(promise: nil)
    }
}

/// How long a background revalidation may take, its answer's body included.
enum CacheRevalidation {
    static let timeLimit = TimeAmount.seconds(30)
}

extension ProxyHandler {
    /// Sends `upstreamHead` (as a GET, with the cache's conditions added) to `target` on a
    /// connection of its own, for a response served stale, and hands the answer to `fill`. Its
    /// addresses are checked as the exchange's would be; when it cannot be sent, the stored
    /// response stays as it is. It is not recorded: the request it revalidates was, as `stale`.
    func revalidateInBackground(
        _ fill: CacheFill, _ upstreamHead: HTTPRequestHead, to target: ProxyTarget, sent: AuditRequest, policy: Policy
    ) {
        guard let context else { return fill.finishWithoutStoring() }
        var get = upstreamHead
        get.method = .GET
        for name in ["content-length", "transfer-encoding", "expect"] { get.headers.remove(name: name) }
        get.headers.replaceOrAdd(name: "Connection", value: "close")
        let head = get
        let services = self.services
        let loop = context.eventLoop
        resolveChecked(target, request: sent, policy: policy, context: context) { resolved in
            guard case .success(let addresses) = resolved else { return fill.finishWithoutStoring() }
            services.value.upstreams.connect(target, addresses, loop) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try Self.addUpstreamHTTP(to: sync, target: target, services: services)
                    try sync.addHandler(CacheRevalidationHandler(fill: fill))
                }
            }
            .whenComplete { result in
                guard case .success(let channel) = result else { return fill.finishWithoutStoring() }
                channel.write(HTTPClientRequestPart.head(head), promise: nil)
                channel.writeAndFlush(HTTPClientRequestPart.end(nil), promise: nil)
                channel.eventLoop.scheduleTask(in: CacheRevalidation.timeLimit) { channel.close(promise: nil) }
            }
        }
    }
}
