import AuditPipeline
import AuditReport
import Foundation
import NIOCore
import NIOHTTP1

/// The life of one client connection of `audit proxy`, as a value: each event (a request part
/// from the client, a response part from the server, an upstream connection made, failed or
/// closed) moves it on and returns what ``ProxyHandler`` must do. The handler does the I/O — the
/// writes, the records, the connections — and decides each request with the pipeline; nothing
/// here touches a channel, so every framing can be tested without a socket.
///
/// One exchange at a time: a request pipelined behind it waits in `HTTPServerPipelineHandler`
/// until the connection is idle again, and the state moves on before the last part of an answer
/// is written, because writing it hands the handler that next request at once.
struct ProxyConnection {
    /// One request the proxy sends on (or tunnels), and what became of it.
    struct Exchange {
        /// The admitted request, which the exchange finishes.
        let audited: AuditedRequest
        let target: ProxyTarget
        /// Where the request went: as decided (the canonical URL, or a redirect rule's target), or
        /// a tunnel's authority.
        let destination: Outcome.Destination
        let version: HTTPVersion
        /// Whether the client keeps the connection for another request.
        let isClientKeepAlive: Bool
        /// Whether the request asked for an upgrade (`Upgrade`, and `upgrade` in `Connection`): the
        /// request decoder reads nothing after such a request, so when it is not spliced (refused,
        /// answered without 101, or h2c, which is not made) the next request is read by a new one.
        let pausesDecoder: Bool
        let expectsContinue: Bool
        /// Whether the request's body goes up in chunks framed here: `chunked` after other transfer
        /// codings (`gzip, chunked`), which the encoder does not frame.
        let framesChunks: Bool
        /// Whether a `101 Switching Protocols` splices the connections (a WebSocket upgrade; never
        /// h2c).
        let isUpgrade: Bool
        var isRequestEnded = false
        var isResponseStarted = false
        var isResponseEnded = false
        var status: Int?
        var bytesFromServer = 0
        var bytesFromClient = 0
        /// Whether the server keeps its connection for the next request.
        var keepsUpstream = true

        /// The request's decision.
        var decision: AuditPipeline.Decision { audited.decision }

        init(_ audited: AuditedRequest, target: ProxyTarget, destination: Outcome.Destination, head: HTTPRequestHead) {
            self.audited = audited
            self.target = target
            self.destination = destination
            version = head.version
            isClientKeepAlive = head.isKeepAlive
            pausesDecoder = head.asksForUpgrade
            expectsContinue = head.expectsContinue
            let codings = ProxyHandler.transferCodings(head.headers)
            framesChunks = codings.count > 1 && codings.last == "chunked"
            isUpgrade = head.headers.contains(name: "upgrade") && !ProxyHandler.isH2CUpgrade(head.headers)
        }
    }

    enum Phase {
        /// Waiting for a request head.
        case idle
        /// The proxy answered the request itself; its body (if any) is read and dropped.
        case answered(closesAfter: Bool, pausesDecoder: Bool)
        /// Connecting upstream; the request parts that arrive meanwhile wait.
        case connecting(Exchange, waiting: [HTTPServerRequestPart])
        /// Reading the request to its end, to match it against a replayed recording; its parts are
        /// kept (`kept`), to send on should it miss, when a miss goes to the server.
        case awaitingReplay(Exchange, kept: [HTTPServerRequestPart]?)
        /// The request goes upstream and the response comes back.
        case forwarding(Exchange)
        /// A CONNECT is being opened: the tunnel is spliced once the server connection is made
        /// (`isConnected`) and the CONNECT has ended (its end may come after the connection).
        case openingTunnel(Exchange, isConnected: Bool)
        /// The connection is closing, or became a tunnel.
        case closed
    }

    private(set) var phase = Phase.idle
    /// Whether a read of the client connection was held back, to be made when the state allows.
    private var isReadHeld = false

    /// What follows an exchange, or an answer of the proxy's own, once it is written.
    enum Next: Equatable {
        /// Wait for the next request on the connection, reading again.
        case awaitNextHead
        /// Wait for the next request on a new request decoder, which reads on from where the one
        /// that read an upgrade request stopped.
        case awaitNextHeadOnNewDecoder
        /// Close the connection.
        case close
    }

    /// Whether a request head is expected now (the handler decides it, then calls
    /// ``answer(closesAfter:isConnect:pausesDecoder:)``, ``forward(_:onKeptUpstream:)`` or ``openTunnel(_:)``).
    var isAwaitingHead: Bool {
        if case .idle = phase { return true }
        return false
    }

    var isForwarding: Bool {
        if case .forwarding = phase { return true }
        return false
    }

    // MARK: Answers of the proxy's own

    /// The proxy answers the request itself (a refusal, a rule's response, a request it does not
    /// take): the rest of the request is read and dropped, then the connection waits for the next
    /// (on a new decoder when `pausesDecoder`) or closes when `closesAfter`. A refused CONNECT has
    /// no body: the connection closes after the answer (``Next/close``); otherwise nil.
    mutating func answer(closesAfter: Bool, isConnect: Bool = false, pausesDecoder: Bool = false) -> Next? {
        if isConnect {
            phase = .closed
            return .close
        }
        phase = .answered(closesAfter: closesAfter, pausesDecoder: pausesDecoder)
        return nil
    }

    /// A malformed request was answered: nothing more is read.
    mutating func failRequest() {
        phase = .closed
    }

    // MARK: Requests sent on

    /// What starting an exchange takes.
    enum ForwardStart: Equatable {
        /// Send the request head on the connection kept from the last exchange.
        case sendHead
        /// Connect first; the request parts that come meanwhile wait
        /// (``upstreamConnected(for:)``).
        case connect
    }

    /// The request of `exchange` goes upstream: on the connection kept from the last exchange when
    /// `onKeptUpstream`, else on a new one.
    mutating func forward(_ exchange: Exchange, onKeptUpstream: Bool) -> ForwardStart {
        if onKeptUpstream {
            phase = .forwarding(exchange)
            return .sendHead
        }
        phase = .connecting(exchange, waiting: [])
        return .connect
    }

    /// What to do with a part of the request.
    enum RequestPartAction {
        case none
        /// Send the part upstream (with a flush).
        case send(HTTPClientRequestPart, flush: Bool)
        /// Send the last chunk (framed here), then the end, and flush.
        case sendLastChunk(ByteBuffer)
        /// The request answered by the proxy is read to its end: ``Next``.
        case answered(Next)
        /// The request the server answered before it ended has ended: ``Next``.
        case exchangeEnded(Next)
        /// The CONNECT ended, and its server connection is made: splice the tunnel.
        case spliceTunnel(Exchange)
        /// A piece of the body of the request that awaits its replay, to take into its match.
        case replayBody(ByteBuffer)
        /// The request that awaits its replay has ended: match it.
        case replayRequestEnded(UUID)
    }

    /// A part of the request after its head.
    mutating func requestPart(_ part: HTTPServerRequestPart) -> RequestPartAction {
        switch phase {
        case .answered(let closesAfter, let pausesDecoder):
            guard case .end = part else { return .none }  // the body of a request answered already
            phase = closesAfter ? .closed : .idle
            return .answered(closesAfter ? .close : pausesDecoder ? .awaitNextHeadOnNewDecoder : .awaitNextHead)
        case .connecting(var exchange, var waiting):
            phase = .closed  // not to copy `waiting` on append
            if case .end = part { exchange.isRequestEnded = true }
            waiting.append(part)
            phase = .connecting(exchange, waiting: waiting)
            return .none
        case .awaitingReplay(var exchange, var kept):
            phase = .closed  // not to copy `kept` on append
            kept?.append(part)
            let action: RequestPartAction
            switch part {
            case .head: action = .none
            case .body(let buffer): action = .replayBody(buffer)
            case .end:
                exchange.isRequestEnded = true
                action = .replayRequestEnded(exchange.decision.id)
            }
            phase = .awaitingReplay(exchange, kept: kept)
            return action
        case .forwarding(var exchange):
            guard !exchange.isResponseEnded else {
                // The server answered before the whole request came: the rest is dropped.
                guard case .end = part else { return .none }
                exchange.isRequestEnded = true
                return .exchangeEnded(leave(exchange))
            }
            switch part {
            case .head:
                return .none
            case .body(let buffer):
                exchange.bytesFromClient += buffer.readableBytes
                phase = .forwarding(exchange)
                guard exchange.framesChunks, buffer.readableBytes > 0 else {
                    return .send(.body(.byteBuffer(buffer)), flush: false)
                }
                var chunk = ByteBuffer(string: String(buffer.readableBytes, radix: 16) + "\r\n")
                var data = buffer
                chunk.writeBuffer(&data)
                chunk.writeString("\r\n")
                return .send(.body(.byteBuffer(chunk)), flush: false)
            case .end(let trailers):
                exchange.isRequestEnded = true
                phase = .forwarding(exchange)
                guard exchange.framesChunks else { return .send(.end(trailers), flush: true) }
                var last = "0\r\n"
                for (name, value) in trailers ?? [:] { last += "\(name): \(value)\r\n" }
                return .sendLastChunk(ByteBuffer(string: last + "\r\n"))
            }
        case .openingTunnel(var exchange, let isConnected):
            guard case .end = part else { return .none }
            exchange.isRequestEnded = true
            guard isConnected else {
                phase = .openingTunnel(exchange, isConnected: false)
                return .none
            }
            phase = .closed
            return .spliceTunnel(exchange)
        case .idle, .closed:
            return .none
        }
    }

    // MARK: Replays

    /// The request of `exchange` is matched against a replayed recording once it has ended: it is
    /// read on meanwhile, its parts kept to be sent on a miss when `keepsParts`.
    mutating func awaitReplay(_ exchange: Exchange, keepsParts: Bool) {
        phase = .awaitingReplay(exchange, kept: keepsParts ? [] : nil)
    }

    /// The request of decision `id`, which awaited its replay, missed and goes to the server: it
    /// waits as if connecting, with the parts kept so far. False when that exchange no longer awaits
    /// its replay (the client left), or its parts were not kept.
    mutating func replayMissed(for id: UUID) -> Bool {
        guard case .awaitingReplay(let exchange, let kept?) = phase, exchange.decision.id == id else { return false }
        phase = .connecting(exchange, waiting: kept)
        return true
    }

    /// Whether the exchange of decision `id` waits for its server (or for the cache's answer): the
    /// client has not left meanwhile.
    func isConnecting(for id: UUID) -> Bool {
        if case .connecting(let exchange, _) = phase { return exchange.decision.id == id }
        return false
    }

    /// The upstream connection for the exchange of decision `id` was made: the state forwards, and
    /// the request parts that waited are returned, to send after the head. Nil when that exchange
    /// no longer waits (the client left): close the connection made.
    mutating func upstreamConnected(for id: UUID) -> [HTTPServerRequestPart]? {
        guard case .connecting(let exchange, let waiting) = phase, exchange.decision.id == id else { return nil }
        phase = .forwarding(exchange)
        return waiting
    }

    /// The exchange of decision `id` gets no server (it cannot be reached, or one of its addresses is
    /// blocked): the proxy answers it. Returns the exchange to record, and what follows the answer:
    /// ``Next`` when the request has ended, nil when its rest is read and dropped first. Nil when
    /// that exchange is over already.
    mutating func answerWithoutUpstream(for id: UUID) -> (Exchange, Next?)? {
        let exchange: Exchange
        switch phase {
        case .connecting(let pending, _) where pending.decision.id == id: exchange = pending
        case .awaitingReplay(let pending, _) where pending.decision.id == id: exchange = pending
        case .forwarding(let pending) where pending.decision.id == id && !pending.isResponseStarted:
            exchange = pending
        default: return nil
        }
        // As for a response: the state moves on before the answer is written.
        if exchange.isRequestEnded { return (exchange, leave(exchange)) }
        phase = .answered(
            closesAfter: !exchange.isClientKeepAlive || exchange.expectsContinue, pausesDecoder: exchange.pausesDecoder)
        return (exchange, nil)
    }

    // MARK: Responses

    /// What to do with a part of the server's response.
    enum ResponsePartAction {
        case none
        /// Write the part to the client.
        case write(HTTPServerResponsePart)
        /// Write an informational response (100 Continue, 103 Early Hints) and flush.
        case writeInterim(HTTPResponseHead)
        /// Write the head of `101 Switching Protocols` and its end, and flush.
        case writeUpgrade(HTTPResponseHead)
        /// The upgrade's response ended: splice the connections, then record the exchange when
        /// the tunnel closes.
        case splice(Exchange)
        /// The response ended: record the exchange, close the server connection when
        /// `closesUpstream`, write the end (flushed), then ``Next`` (nil: the request has not
        /// ended yet, and its rest is read and dropped; the server connection is not kept).
        case end(Exchange, trailers: HTTPHeaders?, closesUpstream: Bool, next: Next?)
    }

    /// A part of the server's response to the exchange under way.
    mutating func responsePart(_ part: HTTPClientResponsePart) -> ResponsePartAction {
        guard case .forwarding(var exchange) = phase else { return .none }
        switch part {
        case .head(let head):
            if head.status == .switchingProtocols, exchange.isUpgrade {
                // Passed on now; the connections are spliced at this response's end, once the
                // server's decoder has nothing more of HTTP to hand on.
                exchange.isResponseStarted = true
                exchange.status = Int(head.status.code)
                phase = .forwarding(exchange)
                var headers = ProxyHandler.endToEnd(head.headers, keepsUpgrade: true)
                headers.replaceOrAdd(name: "Connection", value: "Upgrade")
                return .writeUpgrade(HTTPResponseHead(version: exchange.version, status: head.status, headers: headers))
            }
            if head.status.code / 100 == 1 {
                return .writeInterim(
                    HTTPResponseHead(
                        version: exchange.version, status: head.status,
                        headers: ProxyHandler.endToEnd(head.headers, keepsUpgrade: false)))
            }
            exchange.isResponseStarted = true
            exchange.status = Int(head.status.code)
            exchange.keepsUpstream = head.isKeepAlive
            phase = .forwarding(exchange)
            var headers = ProxyHandler.endToEnd(head.headers, keepsUpgrade: false)
            // The response encoder frames the body: chunked when the server chunked it.
            if ProxyHandler.transferCodings(head.headers).last == "chunked" {
                headers.add(name: "Transfer-Encoding", value: "chunked")
            }
            if !exchange.isClientKeepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
            return .write(.head(HTTPResponseHead(version: exchange.version, status: head.status, headers: headers)))
        case .body(let buffer):
            exchange.bytesFromServer += buffer.readableBytes
            phase = .forwarding(exchange)
            return .write(.body(.byteBuffer(buffer)))
        case .end(let trailers):
            if exchange.status == 101, exchange.isUpgrade {
                phase = .closed
                return .splice(exchange)
            }
            exchange.isResponseEnded = true
            phase = .forwarding(exchange)
            guard exchange.isRequestEnded else {
                // The rest of the request is dropped, so the server, which would read it as the
                // start of the next request, is not kept.
                return .end(exchange, trailers: trailers, closesUpstream: true, next: nil)
            }
            return .end(exchange, trailers: trailers, closesUpstream: !exchange.keepsUpstream, next: leave(exchange))
        }
    }

    /// What to do when the server connection of the exchange under way closes or fails.
    enum UpstreamClosedAction {
        case none
        /// Nothing of the response came: answer 502 (``answerWithoutUpstream(for:)``).
        case answerBadGateway(UUID)
        /// The response was cut short: record the exchange as failed, and close the client
        /// connection so that the client sees the response end abnormally.
        case cutShort(Exchange)
    }

    /// The server connection of the exchange under way closed.
    mutating func upstreamClosed() -> UpstreamClosedAction {
        guard case .forwarding(let exchange) = phase, !exchange.isResponseEnded else { return .none }
        guard exchange.isResponseStarted else { return .answerBadGateway(exchange.decision.id) }
        phase = .closed
        return .cutShort(exchange)
    }

    // MARK: Tunnels

    /// A CONNECT was admitted: the tunnel is being opened.
    mutating func openTunnel(_ exchange: Exchange) {
        phase = .openingTunnel(exchange, isConnected: false)
    }

    /// What the server connection of a CONNECT leads to.
    enum TunnelConnected {
        /// Splice the tunnel now.
        case splice(Exchange)
        /// Keep the connection until the CONNECT's end comes (``RequestPartAction/spliceTunnel(_:)``).
        case awaitRequestEnd
        /// The client has gone: close the connection made.
        case close
    }

    /// The server connection of the CONNECT under way was made.
    mutating func tunnelConnected() -> TunnelConnected {
        guard case .openingTunnel(let exchange, _) = phase else { return .close }
        guard exchange.isRequestEnded else {
            phase = .openingTunnel(exchange, isConnected: true)
            return .awaitRequestEnd
        }
        phase = .closed
        return .splice(exchange)
    }

    /// The tunnel cannot be opened (its server cannot be reached, or an address is blocked): the
    /// connection closes after the answer. Returns the CONNECT's exchange to record (nil when the
    /// client closed the connection meanwhile).
    mutating func tunnelFailed() -> Exchange? {
        guard case .openingTunnel(let exchange, _) = phase else { return nil }
        phase = .closed
        return exchange
    }

    // MARK: The client connection

    /// The client closed the connection: returns the exchange it cut short, to record.
    mutating func clientClosed() -> Exchange? {
        defer { phase = .closed }
        switch phase {
        case .connecting(let exchange, _), .awaitingReplay(let exchange, _), .forwarding(let exchange),
            .openingTunnel(let exchange, _):
            return exchange
        default: return nil
        }
    }

    /// Whether to read from the client now: not while connecting upstream or opening a tunnel, nor while
    /// the request goes to a server connection that cannot take more (`isUpstreamWritable`); the read
    /// is then held back until ``resumeReading(isUpstreamWritable:)``. The rest of a request the
    /// server answered already is read and dropped, whatever the server connection's state (it may
    /// have closed).
    mutating func shouldRead(isUpstreamWritable: Bool) -> Bool {
        isReadHeld = !mayRead(isUpstreamWritable: isUpstreamWritable)
        return !isReadHeld
    }

    /// Whether to make the read held back, now that the state or the server connection allows it.
    mutating func resumeReading(isUpstreamWritable: Bool) -> Bool {
        guard isReadHeld, mayRead(isUpstreamWritable: isUpstreamWritable) else { return false }
        isReadHeld = false
        return true
    }

    private func mayRead(isUpstreamWritable: Bool) -> Bool {
        switch phase {
        case .connecting, .openingTunnel: false
        case .forwarding(let exchange): isUpstreamWritable || exchange.isResponseEnded
        default: true
        }
    }

    /// The state after `exchange`, set before its last response part is written: idle for the next
    /// request, or closed.
    private mutating func leave(_ exchange: Exchange) -> Next {
        if exchange.isClientKeepAlive {
            phase = .idle
            return exchange.pausesDecoder ? .awaitNextHeadOnNewDecoder : .awaitNextHead
        }
        phase = .closed
        return .close
    }
}
