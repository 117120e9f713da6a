import AuditCache
import AuditPipeline
import AuditPolicy
import AuditReport
import Foundation
import NIOCore
import NIOHTTP1

/// Cache rules in the proxy: a request a cache rule matches is looked up before it is sent; a
/// fresh stored response answers it, and a response from the server is stored as it streams to the
/// client.
extension ProxyHandler {
    /// What the cache does for the exchange under way.
    struct CacheExchange {
        /// The request's fill: the cache waits for this exchange's response.
        let fill: CacheFill
        /// Where the response's body goes, when it is being stored.
        var writer: CacheEntryWriter?
        /// How the exchange is recorded when the server's response ends.
        var kind = OutcomeSnapshot.Kind.response
        /// Bytes served from the cache (a revalidated response's body, or a stale one's in place
        /// of an error).
        var bytesFromCache = 0
        /// Whether the server's body is read and dropped: a stale stored response answers in place
        /// of its error (the only way an exchange the cache waited on ends `stale`).
        var dropsServerBody: Bool { kind == .stale }
    }

    /// The cache request of `head` to `url` (canonical), when a cache rule of `verdict` applies to it
    /// and the proxy keeps a cache.
    func cacheRequest(_ head: HTTPRequestHead, url canonical: String, verdict: Verdict) -> (HTTPCache, CacheRequest)? {
        guard let cache = configuration.cache, let rule = verdict.cacheRule, let settings = rule.cacheSettings
        else { return nil }
        let headers = head.headers.snapshot
        return (
            cache,
            CacheRequest(
                method: head.method.rawValue, url: canonical, headers: headers, rule: rule.id, settings: settings)
        )
    }

    /// How a looked-up exchange goes to the server: `send` it (given the headers to add), or
    /// `revalidate` a response served stale with a request of the proxy's own, for the fill.
    struct CacheSending {
        let send: ([RequestSnapshot.Header]) -> Void
        let revalidate: (CacheFill) -> Void
    }

    /// Looks the exchange of decision `id` up in the cache while it waits as if connecting, then
    /// serves what the cache has or sends it on (``CacheSending``).
    func lookUp(_ request: CacheRequest, in cache: HTTPCache, id: UUID, sending: CacheSending) {
        guard let loop = context?.eventLoop else { return }
        let bound = NIOLoopBound((self, sending), eventLoop: loop)
        cache.lookup(request) { lookup in
            // Most lookups answer at once, on the loop; one that waited for another request's
            // response hops back to it.
            guard loop.inEventLoop else {
                return loop.execute {
                    let (handler, sending) = bound.value
                    handler.carryOut(lookup, request: request, id: id, sending: sending)
                }
            }
            let (handler, sending) = bound.value
            handler.carryOut(lookup, request: request, id: id, sending: sending)
        }
    }

    private func carryOut(_ lookup: CacheLookup, request: CacheRequest, id: UUID, sending: CacheSending) {
        guard connection.isConnecting(for: id) else {
            switch lookup {
            case .send(let fill), .staleWhileRevalidating(_, let fill?): fill.finishWithoutStoring()
            case .bypass, .fresh, .staleWhileRevalidating, .stale, .unsatisfiable: break
            }
            return
        }
        switch lookup {
        case .bypass:
            sending.send([])
        case .fresh(let stored):
            serve(stored, answering: request, kind: .cached, id: id)
        case .send(let fill):
            cacheExchange = CacheExchange(fill: fill)
            sending.send(fill.conditionalHeaders)
        case .staleWhileRevalidating(let stored, _), .stale(let stored):
            serve(stored, answering: request, kind: .stale, id: id)
            if case .staleWhileRevalidating(_, let fill?) = lookup { sending.revalidate(fill) }
        case .unsatisfiable:
            let message = CacheLookup.unsatisfiableMessage(method: request.method, url: request.url)
            answerWithoutUpstream(
                id, .gatewayTimeout, { _ in .problem("not-cached", message) }, kind: .failure, reason: message)
        }
    }

    /// The head of `answer` (a stored response's answer to the client's request), served in place of
    /// the server's `head` (a 304 to the cache's condition, or an error a stale response answers
    /// instead).
    private static func servedHead(_ answer: CacheAnswer, replacing head: HTTPResponseHead) -> HTTPClientResponsePart {
        var served = HTTPHeaders(answer.headers.map { ($0.name, $0.value) })
        if !head.isKeepAlive { served.add(name: "Connection", value: "close") }
        return .head(
            HTTPResponseHead(
                version: head.version, status: HTTPResponseStatus(statusCode: answer.status), headers: served))
    }

    /// What the cache does with a part of the server's response: the part to pass on to the state
    /// machine (nil: none; a stored response's head in place of a 304 to the cache's condition, or
    /// of an error a stale response answers instead), and the bytes of the stored body to write
    /// after it. The stored response answers the client's request as a hit does
    /// (``StoredResponse/answer(to:)``): a byte range gets its part.
    func cacheResponsePart(_ part: HTTPClientResponsePart) -> (HTTPClientResponsePart?, StoredBytes?) {
        guard var exchange = cacheExchange else { return (part, nil) }
        defer { cacheExchange = exchange }
        switch part {
        case .head(let head) where head.status.code / 100 == 1:
            return (part, nil)
        case .head(let head):
            let headers = head.headers.snapshot
            if let served = exchange.fill.replacement(forStatus: Int(head.status.code), headers: headers) {
                exchange.kind = served.kind
                exchange.bytesFromCache = served.answer.body.count
                return (
                    Self.servedHead(served.answer, replacing: head),
                    StoredBytes(body: served.stored.body, range: served.answer.body)
                )
            }
            exchange.writer = exchange.fill.store(status: Int(head.status.code), headers: headers)
            if exchange.writer != nil { exchange.kind = .stored }
            return (part, nil)
        case .body(let buffer):
            if exchange.dropsServerBody { return (nil, nil) }
            exchange.writer?.append(buffer.readableBytesView)
            return (part, nil)
        case .end:
            if exchange.dropsServerBody { return (.end(nil), nil) }
            if let writer = exchange.writer, !writer.commit() { exchange.kind = .response }
            return (part, nil)
        }
    }

    /// Serves a stored response to the exchange of decision `id` as it answers `request`
    /// (``StoredResponse/answer(to:)``: 304 to a satisfied condition of the client's own, a part to
    /// a byte range, the head alone to HEAD): its head (with `Age`), then its body in chunks, each
    /// written once the last is, so that a large body takes little memory.
    func serve(_ stored: StoredResponse, answering request: CacheRequest, kind: OutcomeSnapshot.Kind, id: UUID) {
        guard let context, let (exchange, next) = connection.answerWithoutUpstream(for: id) else { return }
        let answer = stored.answer(to: request)
        cacheExchange = nil
        var headers = HTTPHeaders(answer.headers.map { ($0.name, $0.value) })
        if let rule = exchange.decision.verdict.cacheRule { headers.add(name: Denial.ruleHeader, value: rule.id) }
        if !exchange.isClientKeepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
        let status = HTTPResponseStatus(statusCode: answer.status)
        let head = HTTPResponseHead(version: exchange.version, status: status, headers: headers)
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        let bodyLength = answer.body.count
        if recording != nil {
            recording?.response(.head(head))
            if bodyLength > 0 { recording?.stored(stored.body, answer.body) }
            finishRecording()
        }
        let outcome = Outcome(kind, status: answer.status, bytes: bodyLength, destination: .none)
        if bodyLength <= Self.wholeBodyLimit {
            // A small body goes out with its head and end in one write.
            if bodyLength > 0 {
                let bytes = stored.body.chunk(at: answer.body.lowerBound, maximum: bodyLength)
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: bytes)))), promise: nil)
            }
            return endLocalResponse(exchange, outcome, next: next, context: context)
        }
        writeBody(stored.body, from: answer.body.lowerBound, upTo: answer.body.upperBound, context: context) {
            [self] isWritten in
            guard isWritten else {
                tunnel?.exchange.bytesFromServer += bodyLength
                exchange.audited.finish(
                    Outcome(
                        .cancelled, status: answer.status, destination: .none,
                        failure: .init(domain: "AuditProxy", code: 0, description: "the client closed the connection")))
                return
            }
            endLocalResponse(exchange, outcome, next: next, context: context)
        }
    }

    /// Ends a response the proxy gave itself once its body is written (a stored or a recorded
    /// one): records `outcome`, its bytes counted into the tunnel, writes the end, then reads the
    /// next request (``ProxyConnection/Next``), or the rest of this one to drop it when `next` is nil.
    func endLocalResponse(
        _ exchange: Exchange, _ outcome: Outcome, next: ProxyConnection.Next?, context: ChannelHandlerContext
    ) {
        tunnel?.exchange.bytesFromServer += outcome.bytes ?? 0
        exchange.audited.finish(outcome)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        if let next { follow(next) } else { resumeClientReads() }
    }

    /// The largest body written at once with its head; larger ones go a chunk at a time.
    static let wholeBodyLimit = 256 * 1024

    /// Writes the stored bytes of a response served in place of the server's (revalidated, or
    /// stale in place of an error) after its head: a few at once, more a chunk at a time
    /// (``writeBody(_:from:upTo:context:then:)``), what the server connection does meanwhile
    /// held (``HeldUpstreamEvent``), then handled when they are written. The client going away drops them.
    func writeStored(_ stored: StoredBytes, then handler: UpstreamHandler, context: ChannelHandlerContext) {
        guard stored.range.count > Self.wholeBodyLimit else {
            if !stored.range.isEmpty {
                let bytes = stored.body.chunk(at: stored.range.lowerBound, maximum: stored.range.count)
                context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: bytes)))), promise: nil)
            }
            return
        }
        heldUpstreamEvents = []
        writeBody(stored.body, from: stored.range.lowerBound, upTo: stored.range.upperBound, context: context) {
            [self] isWritten in
            let held = heldUpstreamEvents ?? []
            heldUpstreamEvents = nil
            guard isWritten else { return }
            for event in held {
                switch event {
                case .read(let part): upstreamRead(part, from: handler)
                case .closed(let error): upstreamClosed(handler, error: error)
                }
            }
        }
    }

    /// Bytes of a stored body to write: all of it, or a byte range's part.
    struct StoredBytes {
        let body: StoredBody
        let range: Range<Int>
    }

    /// What the server connection did while a stored body was being written.
    enum HeldUpstreamEvent {
        case read(HTTPClientResponsePart)
        case closed(Error?)
    }

    /// Writes `body` from `offset` to `end` in chunks, then calls `then` with whether it was written.
    private func writeBody(
        _ body: StoredBody, from offset: Int, upTo end: Int, context: ChannelHandlerContext,
        then: @escaping (Bool) -> Void
    ) {
        let chunk = offset < end ? body.chunk(at: offset, maximum: min(256 * 1024, end - offset)) : []
        guard !chunk.isEmpty else { return then(offset >= end) }
        context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: chunk)))))
            .assumeIsolated()
            .whenComplete { [self] result in
                guard case .success = result, let context = self.context else { return then(false) }
                // On the next turn of the loop: a write that completes at once would otherwise
                // recurse, each frame keeping its chunk alive.
                let next = NIOLoopBound((self, then), eventLoop: context.eventLoop)
                context.eventLoop.execute {
                    let (handler, then) = next.value
                    guard let context = handler.context else { return then(false) }
                    handler.writeBody(body, from: offset + chunk.count, upTo: end, context: context, then: then)
                }
            }
    }

    /// When the server cannot be reached: serves the stored response the cache allows instead of
    /// a 502 (the rule's `offline`, or `stale-if-error`). Returns whether it did.
    func serveFallback(for id: UUID) -> Bool {
        guard let fill = cacheExchange?.fill, let stored = fill.fallback else { return false }
        fill.finishWithoutStoring()
        serve(stored, answering: fill.request, kind: .stale, id: id)
        return true
    }
}
