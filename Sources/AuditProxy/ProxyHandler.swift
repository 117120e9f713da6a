import AuditCache
import AuditPipeline
import AuditPolicy
import AuditReport
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// What every connection handler of one proxy shares: the pipeline and the settings.
struct ProxyServices: Sendable {
    let pipeline: AuditPipeline
    let configuration: ProxyConfiguration
    /// Writes one line about a problem (a malformed or slow request, an unreachable server).
    let report: @Sendable (String) -> Void
    /// How servers are reached.
    var upstreams = UpstreamConnector.sockets
}

/// The HTTP handlers of a client connection, removed when it becomes a tunnel.
struct ClientHTTPHandlers {
    var decoder: ByteToMessageHandler<HTTPRequestDecoder>
    /// A decoder like the first, to read on after an upgrade request that was not spliced.
    let makeDecoder: () -> ByteToMessageHandler<HTTPRequestDecoder>
    let encoder: HTTPResponseEncoder
    let pipelining: HTTPServerPipelineHandler
    let connectionGuard: ConnectionGuard
}

/// The proxy's front-end for one client connection: turns each request into an `AuditRequest`,
/// has the pipeline decide it, and carries out the verdict: answers a refusal itself, sends the
/// request upstream with both bodies streamed under backpressure, or opens a CONNECT tunnel. Where
/// the connection is, and what each event leads to, is ``ProxyConnection``'s; this handler does
/// the I/O its answers ask for.
///
/// A plain HTTP request is decided on everything it carries (method, absolute URL, headers). A
/// CONNECT is decided on what a proxy sees of it: `https://HOST[:PORT]` and its headers. Inside a
/// tunnel whose TLS the proxy terminated, a handler of its own (``tunnel``) decides each request
/// as plain HTTP, on its `https://` URL.
final class ProxyHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    typealias Exchange = ProxyConnection.Exchange

    /// An upstream connection, kept between requests to the same server (``ProxyTarget/upstreamKey``).
    struct Upstream {
        let target: ProxyTarget
        let channel: Channel
        let handler: UpstreamHandler
    }

    let services: ServicesBox
    var http: ClientHTTPHandlers
    var context: ChannelHandlerContext?
    /// Where the connection is; every transition is the state machine's.
    var connection = ProxyConnection()
    /// The server connection of the exchange under way, or kept from the last one.
    var upstream: Upstream?
    /// How the CONNECT under way goes on once its end comes: spliced to the server connection made,
    /// or intercepted.
    var tunnelWay: TunnelWay?
    /// The intercepted tunnel this handler serves the requests of; nil on a client connection.
    var tunnel: InterceptedTunnel?
    /// What the cache does for the exchange under way, when a cache rule matched it.
    var cacheExchange: CacheExchange?
    /// What the server connection did while a stored body, served in place of the server's
    /// response, was being written (the response's end, at least): handled in order once it is.
    /// Nil when none is being written.
    var heldUpstreamEvents: [HeldUpstreamEvent]?
    /// What the recording keeps of the exchange under way (`--record`).
    var recording: RecordingCapture?
    /// The request waiting for its body to be matched against the replayed recording.
    var pendingReplay: PendingReplay?
    /// The cache entry the exchange under way drops when the server answers it without an error (a
    /// POST, PUT, PATCH or DELETE a cache rule matched).
    var invalidation: (cache: HTTPCache, url: String)?

    enum TunnelWay {
        case splice(Channel)
        case intercept
    }

    /// The services, boxed so the handler can pass them to Sendable closures.
    final class ServicesBox: Sendable {
        let value: ProxyServices
        init(_ value: ProxyServices) { self.value = value }
    }

    init(services: ServicesBox, http: ClientHTTPHandlers, tunnel: InterceptedTunnel? = nil) {
        self.services = services
        self.http = http
        self.tunnel = tunnel
    }

    /// Sets up a client connection's handlers: the guard against slow clients, the HTTP/1.1
    /// decoder and encoder, the handler that holds pipelined requests back, and the proxy's.
    static func install(on channel: any Channel, services: ProxyServices) throws {
        let (http, proxy) = makeHandlers(services: ServicesBox(services), tunnel: nil)
        try add(http, proxy, to: channel.pipeline.syncOperations)
    }

    /// Adds `http`'s handlers and `proxy` at the end of a pipeline, in order.
    static func add(
        _ http: ClientHTTPHandlers, _ proxy: ProxyHandler, to sync: ChannelPipeline.SynchronousOperations
    ) throws {
        try sync.addHandler(http.connectionGuard)
        try sync.addHandler(http.encoder)
        try sync.addHandler(http.decoder)
        try sync.addHandler(http.pipelining)
        try sync.addHandler(proxy)
    }

    /// The handlers of ``install(on:services:)``, in order, not yet added.
    static func makeHandlers(services: ServicesBox, tunnel: InterceptedTunnel?) -> (
        http: ClientHTTPHandlers, proxy: ProxyHandler
    ) {
        let configuration = services.value.configuration
        let connectionGuard = ConnectionGuard(
            headerTimeout: configuration.headerTimeout, idleTimeout: configuration.idleTimeout,
            report: services.value.report)
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderListSize = configuration.maximumHeaderBytes
        limits.maxHeaderFieldSize = configuration.maximumHeaderBytes
        let makeDecoder = {
            ByteToMessageHandler(HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes, limitConfiguration: limits))
        }
        let http = ClientHTTPHandlers(
            decoder: makeDecoder(), makeDecoder: makeDecoder,
            encoder: HTTPResponseEncoder(), pipelining: HTTPServerPipelineHandler(),
            connectionGuard: connectionGuard)
        return (http, ProxyHandler(services: services, http: http, tunnel: tunnel))
    }

    var pipeline: AuditPipeline { services.value.pipeline }
    var upstreams: UpstreamConnector { services.value.upstreams }
    var configuration: ProxyConfiguration { services.value.configuration }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
    }

    // MARK: Requests from the client

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let part = unwrapInboundIn(data)
        if case .head(let head) = part {
            guard connection.isAwaitingHead else { return }
            http.connectionGuard.headReceived()
            if head.method == .CONNECT {
                guard tunnel == nil else { return refuseNestedTunnel(head, context: context) }
                openTunnel(head, context: context)
            } else {
                startExchange(head, context: context)
            }
            return
        }
        recording?.request(part)
        perform(connection.requestPart(part), context: context)
    }

    /// Carries out what a request part leads to.
    func perform(_ action: ProxyConnection.RequestPartAction, context: ChannelHandlerContext) {
        switch action {
        case .none:
            break
        case .send(let part, let flush):
            upstream?.handler.send(part, flush: flush)
        case .sendLastChunk(let chunk):
            upstream?.handler.send(.body(.byteBuffer(chunk)))
            upstream?.handler.send(.end(nil), flush: true)
        case .answered(let next):
            // The client may have sent more before reading the answer: its output is closed first.
            follow(next, closesGracefully: true)
        case .exchangeEnded(let next):
            finishRecording()
            follow(next)
        case .replayBody(let buffer):
            takeReplayBody(buffer)
        case .replayRequestEnded(let id):
            matchRecording(id)
        case .spliceTunnel(let exchange):
            guard let way = tunnelWay else { return }
            tunnelWay = nil
            switch way {
            case .splice(let server): spliceTunnel(exchange, to: server, context: context)
            case .intercept: intercept(exchange, context: context)
            }
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if connection.isForwarding { upstream?.handler.flush() }
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        if connection.shouldRead(isUpstreamWritable: upstream?.handler.isWritable ?? false) { context.read() }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        // The kept upstream connection reads again, whether or not a request is under way: a read it
        // held back at the end of the last response must not stall the next one.
        if context.channel.isWritable { upstream?.handler.resumeReading() }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        if recording?.isResponseEnded == true { finishRecording() }
        if let exchange = connection.clientClosed() {
            finish(exchange, kind: .cancelled, error: "the client closed the connection")
        }
        upstream?.channel.close(promise: nil)
        upstream = nil
        if case .splice(let server) = tunnelWay { server.close(promise: nil) }
        tunnelWay = nil
        finishTunnel()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if let tunnel, let reason = Self.tunnelFailure(error, host: tunnel.target.host) {
            services.value.report("\(context.remoteAddressText): CONNECT \(tunnel.target.authority): \(reason)")
            finishTunnel(failure: reason)
            context.close(promise: nil)
            return
        }
        guard let parserError = error as? HTTPParserError else {
            context.close(promise: nil)
            return
        }
        let (status, kind) =
            parserError == .headerOverflow
            ? (HTTPResponseStatus.requestHeaderFieldsTooLarge, "too-large") : (.badRequest, "bad-request")
        services.value.report("\(context.remoteAddressText): \(status.code) malformed request (\(parserError))")
        guard connection.isAwaitingHead else {
            context.close(promise: nil)
            return
        }
        connection.failRequest()
        writeProblem(status, .problem(kind, "malformed request: \(parserError)"), close: true, context: context)
    }

    // MARK: Plain HTTP

    func startExchange(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        if let tunnel {
            guard let url = tunnel.requestURL(for: head.uri) else {
                return badRequest(
                    "inside the tunnel to \(tunnel.target.authority), requests take a path (/…) or a URL of "
                        + "\(tunnel.target.tunnelURL) (got '\(head.uri)')", context: context)
            }
            guard head.headers.contains(name: "host") else {
                return badRequest("the request has no Host header", context: context)
            }
            return startExchange(head, url: url, context: context)
        }
        guard ProxyTarget.isAbsoluteHTTP(head.uri) else {
            services.value.report("\(context.remoteAddressText): 400 not a proxy request: \(head.method) \(head.uri)")
            _ = connection.answer(closesAfter: true)
            writeProblem(
                .badRequest,
                .problem(
                    "bad-request",
                    "audit proxy takes absolute-form http:// requests, and CONNECT for https (got '\(head.uri)')"),
                close: false, context: context)
            return
        }
        startExchange(head, url: head.uri, context: context)
    }

    /// Answers 400 with `problem`, and closes the connection after it.
    func badRequest(_ problem: String, context: ChannelHandlerContext) {
        services.value.report("\(context.remoteAddressText): 400 \(problem)")
        _ = connection.answer(closesAfter: true)
        writeProblem(.badRequest, .problem("bad-request", problem), close: false, context: context)
    }

    /// Decides and carries out the request of `head` to `url` (its absolute URL: the request URI of a
    /// plain proxy request, or the tunnel's origin and the request target inside a tunnel).
    func startExchange(_ head: HTTPRequestHead, url: String, context: ChannelHandlerContext) {
        // The request the server acts on is the canonical one, sent to the URI's host: a Host header
        // that names another server, or two of them, would have the server act on a request
        // nobody decided.
        let canonical = try? CanonicalURL(url)
        let requested = canonical.flatMap { ProxyTarget(canonical: $0, allowsTLS: tunnel != nil) }
        let hosts = head.headers["host"]
        // Inside a tunnel, a Host header found to name its origin once is not parsed again.
        let isKnownHost = hosts.count == 1 && tunnel?.namingHost == hosts.first
        let isHostContradicted =
            !isKnownHost
            && hosts.first.map { host in requested.map { !$0.isNamed(byHostHeader: host) } ?? false } == true
        if hosts.count > 1 || isHostContradicted {
            let named = tunnel.map { "the CONNECT target '\($0.target.authority)'" } ?? "the request URI '\(head.uri)'"
            return badRequest(
                hosts.count > 1
                    ? "the request has \(hosts.count) Host headers"
                    : "the Host header '\(hosts.first ?? "")' names another server than \(named)", context: context)
        }
        if tunnel != nil, hosts.count == 1 { tunnel?.namingHost = hosts.first }
        let request = AuditRequest(
            method: head.method.rawValue, url: url,
            headers: head.headers.map { AuditRequest.Header(name: $0.name, value: $0.value) })
        let audited = pipeline.admit(
            request, bodyBytes: head.announcedBodyBytes,
            tunnel: tunnel?.exchange.decision.id)
        if tunnel?.hasRequests == false {
            tunnel?.hasRequests = true
            pipeline.countInterceptedTunnel()
        }
        let decision = audited.decision
        guard case .send(let redirected) = carryOut(audited, head: head, context: context) else { return }
        // Decided, so valid: an invalid URL is refused by the policy.
        guard let requested else {
            return refuse(audited, .blocked(decision), head: head, context: context)
        }
        let target = redirected ?? requested
        let exchange = Exchange(audited, target: target, destination: .asDecided, head: head)
        startRecording(head, url: redirected == nil ? url : decision.verdict.redirectTarget ?? url)
        // Made when the request goes to the server: a cache hit never needs it.
        let upstreamHead = { Self.upstreamHead(head, target: target) }
        // What is sent, for the check of the addresses it goes to: the redirect target, if any.
        let sent =
            redirected == nil
            ? request
            : AuditRequest(
                method: request.method, url: decision.verdict.redirectTarget ?? request.url, headers: request.headers)
        invalidation = nil
        // A GET or HEAD a cache rule matches is looked up before it goes to the server: at once, or
        // after a replayed recording missed it (`--on-miss pass`). A request that changes what its
        // URL answers drops the stored response once answered, whatever rule matched it.
        var lookUpFirst: (() -> Void)?
        let cacheURL = canonical?.string ?? url
        if redirected == nil, let cache = configuration.cache, HTTPCache.changesResource(method: head.method.rawValue) {
            invalidation = (cache, cacheURL)
        } else if redirected == nil, head.method == .GET || head.method == .HEAD,
            let (cache, request) = cacheRequest(head, url: cacheURL, verdict: decision.verdict)
        {
            let withAdded = { (added: [RequestSnapshot.Header]) -> HTTPRequestHead in
                var upstreamHead = upstreamHead()
                for header in added { upstreamHead.headers.replaceOrAdd(name: header.name, value: header.value) }
                return upstreamHead
            }
            let sending = CacheSending(
                send: { [self] added in
                    sendAfterLookup(
                        exchange.decision.id, withAdded(added), to: target, sent: sent, policy: decision.policy)
                },
                revalidate: { [self] fill in
                    revalidateInBackground(
                        fill, withAdded(fill.conditionalHeaders), to: target, sent: sent, policy: decision.policy)
                })
            lookUpFirst = { [self] in
                lookUp(request, in: cache, id: exchange.decision.id, sending: sending)
            }
        }
        if let replay = configuration.replay {
            if let bodies = replay.matchingBodies(method: head.method.rawValue, url: url),
                head.knownBodyBytes.map(bodies.canMatch(size:)) ?? true
            {
                return awaitReplay(exchange, head: head, url: url, bodies: bodies) { [self] in
                    guard let lookUpFirst else {
                        return sendAfterLookup(
                            exchange.decision.id, upstreamHead(), to: target, sent: sent, policy: decision.policy)
                    }
                    lookUpFirst()
                }
            }
            if configuration.replayMiss == .fail {
                _ = connection.forward(exchange, onKeptUpstream: false)
                return answerReplayMiss(exchange.decision.id, method: head.method.rawValue, url: url, replay: replay)
            }
            // A miss under `--on-miss pass` goes on at once, its body streamed.
        }
        if let lookUpFirst {
            _ = connection.forward(exchange, onKeptUpstream: false)
            return lookUpFirst()
        }
        let kept = keptUpstream(for: target, sent: sent, policy: decision.policy)
        switch connection.forward(exchange, onKeptUpstream: kept != nil) {
        case .sendHead:
            guard let kept else { return }
            kept.handler.owner = self
            kept.handler.send(.head(upstreamHead()))
            if context.channel.isWritable { kept.handler.resumeReading() }
        case .connect:
            connectAndSend(
                decision.id, upstreamHead(), to: target, sent: sent, policy: decision.policy, context: context)
        }
    }

    /// The upstream connection kept from the last exchange, when it goes to `target` and its address
    /// is not blocked for `sent`.
    private func keptUpstream(for target: ProxyTarget, sent: AuditRequest, policy: Policy) -> Upstream? {
        upstream.flatMap { upstream in
            upstream.target.upstreamKey == target.upstreamKey && upstream.channel.isActive
                && Self.addressRefusal(
                    of: sent, host: target.host,
                    addresses: [upstream.channel.remoteAddress?.ipAddress].compactMap { $0 }, pipeline: pipeline,
                    policy: policy) == nil
                ? upstream : nil
        }
    }

    /// Sends the exchange of decision `id`, which waits as if connecting (the cache was asked
    /// first), on the kept connection or a new one.
    func sendAfterLookup(
        _ id: UUID, _ upstreamHead: HTTPRequestHead, to target: ProxyTarget, sent: AuditRequest, policy: Policy
    ) {
        guard let context else { return }
        guard let kept = keptUpstream(for: target, sent: sent, policy: policy) else {
            return connectAndSend(id, upstreamHead, to: target, sent: sent, policy: policy, context: context)
        }
        guard let waiting = connection.upstreamConnected(for: id) else { return }
        send(upstreamHead, on: kept, then: waiting, context: context)
    }

    /// Connects to `target` for the exchange of decision `id` (which waits, connecting), then sends
    /// its head and the parts that came meanwhile; answers it when the server cannot be reached.
    private func connectAndSend(
        _ id: UUID, _ upstreamHead: HTTPRequestHead, to target: ProxyTarget, sent: AuditRequest, policy: Policy,
        context: ChannelHandlerContext
    ) {
        upstream?.channel.close(promise: nil)
        upstream = nil
        connect(to: target, request: sent, policy: policy, context: context) { [self] result in
            switch result {
            case .success(let made):
                guard let waiting = connection.upstreamConnected(for: id), let context = self.context else {
                    made.channel.close(promise: nil)
                    return
                }
                upstream = made
                send(upstreamHead, on: made, then: waiting, context: context)
            case .failure(let refusal as AddressRefusal):
                answerWithoutUpstream(
                    id, .forbidden, { .blockedAddress($0.decision, refusal) }, kind: .blocked,
                    reason: refusal.description)
            case .failure(let error):
                failUpstream(id, reason: "cannot connect to \(target.authority): \(SocketErrorReason.of(error))")
            }
        }
    }

    /// Sends `upstreamHead` on `made`, then the request parts that waited for it.
    private func send(
        _ upstreamHead: HTTPRequestHead, on made: Upstream, then waiting: [HTTPServerRequestPart],
        context: ChannelHandlerContext
    ) {
        made.handler.owner = self
        made.handler.send(.head(upstreamHead))
        for part in waiting { perform(connection.requestPart(part), context: context) }
        made.handler.flush()
        resumeClientReads()
    }

    // MARK: Responses from the server

    /// Whether the client connection can take more without queueing.
    var isClientWritable: Bool { context?.channel.isWritable ?? false }

    func upstreamRead(_ part: HTTPClientResponsePart, from handler: UpstreamHandler) {
        guard let context, let upstream, upstream.handler === handler else { return }
        if heldUpstreamEvents != nil {
            heldUpstreamEvents?.append(.read(part))
            return
        }
        // Recorded as the client gets it: a stored response in place of the server's.
        let (passed, storedBytes) = cacheResponsePart(part)
        guard let part = passed else { return }
        recording?.response(part)
        if let storedBytes { recording?.stored(storedBytes.body, storedBytes.range) }
        switch connection.responsePart(part) {
        case .none:
            break
        case .write(let part):
            context.write(wrapOutboundOut(part), promise: nil)
            // A stored response in place of the server's: its body follows its head, and the
            // server's parts after it wait until it is written.
            if let storedBytes { writeStored(storedBytes, then: handler, context: context) }
        case .writeInterim(let head):
            context.writeAndFlush(wrapOutboundOut(.head(head)), promise: nil)
        case .writeUpgrade(let head):
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        case .splice(let exchange):
            upgrade(exchange, upstream, context: context)
        case .end(let exchange, let trailers, let closesUpstream, let next):
            if let invalidation, let status = exchange.status, status < 400 {
                invalidation.cache.invalidate(url: invalidation.url)
            }
            invalidation = nil
            // A request still under way is recorded whole, when it ends (`.exchangeEnded`).
            if exchange.isRequestEnded { finishRecording() }
            finish(exchange, kind: cacheExchange?.kind ?? .response)
            if closesUpstream {
                upstream.channel.close(promise: nil)
                self.upstream = nil
            }
            // The state moved on before the end is written: writing it hands this handler the
            // next pipelined request at once, which must find the connection idle.
            context.writeAndFlush(wrapOutboundOut(.end(trailers)), promise: nil)
            // Without `next`, the rest of the request is read and dropped: a read held back for
            // the server is made now.
            if let next { follow(next) } else { resumeClientReads() }
        }
    }

    func upstreamReadComplete(from handler: UpstreamHandler) {
        context?.flush()
    }

    func upstreamBecameWritable(_ handler: UpstreamHandler) {
        guard connection.isForwarding, upstream?.handler === handler else { return }
        resumeClientReads()
    }

    func upstreamClosed(_ handler: UpstreamHandler, error: Error?) {
        guard let closed = upstream, closed.handler === handler else { return }
        if heldUpstreamEvents != nil {
            heldUpstreamEvents?.append(.closed(error))
            return
        }
        upstream = nil
        let reason =
            error.map { Self.upstreamFailure($0, target: closed.target) } ?? "the server closed the connection"
        switch connection.upstreamClosed() {
        case .none:
            break
        case .answerBadGateway(let id):
            guard let error else { return failUpstream(id, reason: reason) }
            explainUpstreamFailure(error, of: closed, reason: reason) { [self] explained in
                failUpstream(id, reason: explained)
            }
        case .cutShort(let exchange):
            // The response was cut short: the client must see it end abnormally.
            finish(exchange, kind: .failure, error: reason)
            context?.close(promise: nil)
        }
    }

    /// What follows an exchange once its answer is written: read the next request (with a new
    /// decoder after an upgrade request), or close; with `closesGracefully`, output first (see
    /// ``closeGracefully(_:)``).
    func follow(_ next: ProxyConnection.Next, closesGracefully: Bool = false) {
        guard let context else { return }
        switch next {
        case .awaitNextHead:
            http.connectionGuard.waitForNextHead()
            resumeClientReads()
        case .awaitNextHeadOnNewDecoder:
            replaceDecoder(context: context)
            http.connectionGuard.waitForNextHead()
            resumeClientReads()
        case .close:
            if closesGracefully { Self.closeGracefully(context.channel) } else { context.close(promise: nil) }
        }
    }

    /// Puts a new request decoder in place of the one that read an upgrade request (which reads
    /// nothing after it): the bytes the old one holds, the next request's, pass on into the new one
    /// as it is removed.
    func replaceDecoder(context: ChannelHandlerContext) {
        let fresh = http.makeDecoder()
        let sync = context.pipeline.syncOperations
        do {
            try sync.addHandler(fresh, position: .after(http.decoder))
        } catch {
            context.close(promise: nil)
            return
        }
        let old = http.decoder
        http.decoder = fresh
        sync.removeHandler(old, promise: nil)
    }

    func failUpstream(_ id: UUID, reason: String) {
        if serveFallback(for: id) { return }
        answerWithoutUpstream(
            id, .badGateway, { .upstream($0.decision, reason: reason) }, kind: .failure, reason: reason)
    }

    /// Answers a decided request the proxy could not, or must not, send: 502 when the server cannot
    /// be reached, 403 when one of its addresses is blocked.
    func answerWithoutUpstream(
        _ id: UUID, _ status: HTTPResponseStatus, _ denial: (Exchange) -> Denial, kind: OutcomeSnapshot.Kind,
        reason: String
    ) {
        guard let context, let (exchange, next) = connection.answerWithoutUpstream(for: id) else { return }
        services.value.report("\(context.remoteAddressText): \(status.code) \(exchange.target.authority): \(reason)")
        finish(exchange, kind: kind, error: reason, code: Int(status.code))
        let problem = denial(exchange)
        writeProblem(status, problem, close: false, rule: problem.rule, context: context)
        if let next {
            follow(next)
        } else {
            resumeClientReads()
        }
    }

    // MARK: The client connection

    /// Closes the client connection after an answer without losing it: the output first (the client
    /// reads the answer, then the end), the whole connection a moment later. Closing at once while
    /// the client's pipelined bytes are unread would reset the connection, and a reset can destroy
    /// the answer before the client reads it.
    static func closeGracefully(_ channel: Channel) {
        channel.close(mode: .output).whenFailure { _ in channel.close(promise: nil) }
        channel.eventLoop.scheduleTask(in: .seconds(2)) { channel.close(promise: nil) }
    }

    func resumeClientReads() {
        guard let context, connection.resumeReading(isUpstreamWritable: upstream?.handler.isWritable ?? false) else {
            return
        }
        context.read()
    }

    // MARK: Records

    /// Records `exchange` as `kind` (failed for `error`), counting its bytes into the tunnel it went
    /// through, if any.
    func finish(_ exchange: Exchange, kind: OutcomeSnapshot.Kind, error: String? = nil, code: Int = 502) {
        tunnel?.exchange.bytesFromClient += exchange.bytesFromClient
        tunnel?.exchange.bytesFromServer += exchange.bytesFromServer
        var outcome = Self.outcome(of: exchange, kind: kind, error: error, code: code)
        if let cached = cacheExchange {
            // The end of the exchange the cache waited for: a body not stored whole is dropped.
            cached.writer?.abandon()
            cached.fill.finishWithoutStoring()
            if kind == .revalidated || kind == .stale { outcome.bytes = cached.bytesFromCache }
            cacheExchange = nil
        }
        exchange.audited.finish(outcome)
    }

    /// What became of `exchange`, for its record; a failure's `error` under the status the client
    /// was answered with (`code`).
    static func outcome(of exchange: Exchange, kind: OutcomeSnapshot.Kind, error: String?, code: Int = 502) -> Outcome {
        Outcome(
            kind, status: exchange.status, bytes: exchange.bytesFromServer, sentBytes: exchange.bytesFromClient,
            destination: exchange.destination,
            failure: error.map { Outcome.Failure(domain: "AuditProxy", code: code, description: $0) })
    }

}

extension HTTPRequestHead {
    /// Whether the connection closes after the proxy answers this request itself: when the client
    /// asked for it, or when it waits for `100 Continue` before a body it will now never send. The
    /// body of any other request is read and dropped, and the next request on the connection is
    /// served (after an upgrade request, by a new decoder).
    var closesAfterAnswer: Bool {
        !isKeepAlive || (hasBody && expectsContinue)
    }

    /// Whether the request asks for an upgrade as the request decoder (llhttp) reads it: an
    /// `Upgrade` header and the `upgrade` token in `Connection`. The decoder then stops after it.
    var asksForUpgrade: Bool {
        headers.contains(name: "upgrade")
            && headers[canonicalForm: "connection"].contains { $0.lowercased() == "upgrade" }
    }

    /// Whether the request waits for `100 Continue` before sending its body.
    var expectsContinue: Bool {
        headers[canonicalForm: "expect"].contains { $0.lowercased() == "100-continue" }
    }

    /// The body's size as `Content-Length` announces it; nil when no length is announced.
    var announcedBodyBytes: Int? { headers.first(name: "content-length").flatMap { Int($0) } }

    /// The size of the body that follows the head, when the head tells it: nil for a body framed
    /// by a transfer coding (chunks), else its `Content-Length`, or none without one.
    var knownBodyBytes: Int? {
        headers.contains(name: "transfer-encoding") ? nil : announcedBodyBytes ?? 0
    }

    /// Whether a body follows the head.
    var hasBody: Bool { knownBodyBytes.map { $0 > 0 } ?? true }
}
