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
    let decoder: ByteToMessageHandler<HTTPRequestDecoder>
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
/// CONNECT is decided on what a proxy sees of it: `https://HOST[:PORT]` and its headers.
final class ProxyHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    typealias Exchange = ProxyConnection.Exchange

    /// An upstream connection, kept between requests to the same server.
    private struct Upstream {
        let authority: String
        let channel: Channel
        let handler: UpstreamHandler
    }

    private let services: ServicesBox
    private let http: ClientHTTPHandlers
    private var context: ChannelHandlerContext?
    /// Where the connection is; every transition is the state machine's.
    private var connection = ProxyConnection()
    /// The server connection of the exchange under way, or kept from the last one.
    private var upstream: Upstream?
    /// The server connection of a CONNECT made before the CONNECT's end came.
    private var tunnelServer: Channel?

    /// The services, boxed so the handler can pass them to Sendable closures.
    private final class ServicesBox: Sendable {
        let value: ProxyServices
        init(_ value: ProxyServices) { self.value = value }
    }

    init(services: ProxyServices, http: ClientHTTPHandlers) {
        self.services = ServicesBox(services)
        self.http = http
    }

    /// Sets up a client connection's handlers: the guard against slow clients, the HTTP/1.1
    /// decoder and encoder, the handler that holds pipelined requests back, and the proxy's.
    static func install(on channel: any Channel, services: ProxyServices) throws {
        let configuration = services.configuration
        let connectionGuard = ConnectionGuard(
            headerTimeout: configuration.headerTimeout, idleTimeout: configuration.idleTimeout,
            report: services.report)
        var limits = NIOHTTPDecoderLimitConfiguration()
        limits.maxHeaderListSize = configuration.maximumHeaderBytes
        limits.maxHeaderFieldSize = configuration.maximumHeaderBytes
        let http = ClientHTTPHandlers(
            decoder: ByteToMessageHandler(
                HTTPRequestDecoder(leftOverBytesStrategy: .forwardBytes, limitConfiguration: limits)),
            encoder: HTTPResponseEncoder(), pipelining: HTTPServerPipelineHandler(),
            connectionGuard: connectionGuard)
        let sync = channel.pipeline.syncOperations
        try sync.addHandler(connectionGuard)
        try sync.addHandler(http.encoder)
        try sync.addHandler(http.decoder)
        try sync.addHandler(http.pipelining)
        try sync.addHandler(ProxyHandler(services: services, http: http))
    }

    var pipeline: AuditPipeline { services.value.pipeline }
    var upstreams: UpstreamConnector { services.value.upstreams }
    private var configuration: ProxyConfiguration { services.value.configuration }

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
                openTunnel(head, context: context)
            } else {
                startExchange(head, context: context)
            }
            return
        }
        perform(connection.requestPart(part), context: context)
    }

    /// Carries out what a request part leads to.
    private func perform(_ action: ProxyConnection.RequestPartAction, context: ChannelHandlerContext) {
        switch action {
        case .none:
            break
        case .send(let part, let flush):
            upstream?.handler.send(part, flush: flush)
        case .sendLastChunk(let chunk):
            upstream?.handler.send(.body(.byteBuffer(chunk)))
            upstream?.handler.send(.end(nil), flush: true)
        case .answered(.awaitNextHead):
            http.connectionGuard.waitForNextHead()
        case .answered(.close):
            Self.closeGracefully(context.channel)
        case .exchangeEnded(let next):
            follow(next)
        case .spliceTunnel(let exchange):
            guard let server = tunnelServer else { return }
            tunnelServer = nil
            spliceTunnel(exchange, to: server, context: context)
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
        if let exchange = connection.clientClosed() {
            finish(exchange, kind: .cancelled, error: "the client closed the connection")
        }
        upstream?.channel.close(promise: nil)
        upstream = nil
        tunnelServer?.close(promise: nil)
        tunnelServer = nil
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
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

    private func startExchange(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
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
        // The request the server acts on is the canonical one, sent to the URI's host: a Host header
        // that names another server, or two of them, would have the server act on a request
        // nobody decided.
        let requested = ProxyTarget(absoluteURI: head.uri)
        let hosts = head.headers["host"]
        let isHostContradicted = hosts.first.map { host in requested.map { !$0.isNamed(byHostHeader: host) } ?? false }
        if hosts.count > 1 || isHostContradicted == true {
            let problem =
                hosts.count > 1
                ? "the request has \(hosts.count) Host headers"
                : "the Host header '\(hosts.first ?? "")' names another server than the request URI '\(head.uri)'"
            services.value.report("\(context.remoteAddressText): 400 \(problem)")
            _ = connection.answer(closesAfter: true)
            writeProblem(.badRequest, .problem("bad-request", problem), close: false, context: context)
            return
        }
        let request = AuditRequest(
            method: head.method.rawValue, url: head.uri,
            headers: head.headers.map { AuditRequest.Header(name: $0.name, value: $0.value) })
        let decision = pipeline.decide(
            request, bodyBytes: head.headers.first(name: "content-length").flatMap { Int($0) })
        guard let (warning, redirected) = admit(decision, head: head, canRedirect: true, context: context) else {
            return
        }
        // Decided, so valid: an invalid URL is refused by the policy.
        guard let requested else {
            return refuse(decision, .blocked(decision), kind: .blocked, warning: warning, head: head, context: context)
        }
        let target = redirected ?? requested
        let exchange = Exchange(
            decision: decision, warning: warning, target: target,
            forwardedURL: decision.decision.redirect ?? decision.snapshot.url, head: head)
        let upstreamHead = Self.upstreamHead(head, target: target)
        // What is sent, for the check of the addresses it goes to: the redirect target, if any.
        let sent =
            redirected == nil
            ? request
            : AuditRequest(
                method: request.method, url: decision.verdict.redirectTarget ?? request.url, headers: request.headers)
        let kept = upstream.flatMap { upstream in
            upstream.authority == target.authority && upstream.channel.isActive
                && Self.addressRefusal(
                    of: sent, host: target.host,
                    addresses: [upstream.channel.remoteAddress?.ipAddress].compactMap { $0 }, pipeline: pipeline,
                    policy: decision.policy) == nil
                ? upstream : nil
        }
        switch connection.forward(exchange, onKeptUpstream: kept != nil) {
        case .sendHead:
            guard let kept else { return }
            kept.handler.owner = self
            kept.handler.send(.head(upstreamHead))
            if context.channel.isWritable { kept.handler.resumeReading() }
        case .connect:
            upstream?.channel.close(promise: nil)
            upstream = nil
            let id = decision.id
            connect(to: target, request: sent, policy: decision.policy, context: context) { [self] result in
                switch result {
                case .success(let made):
                    guard let waiting = connection.upstreamConnected(for: id) else {
                        made.channel.close(promise: nil)
                        return
                    }
                    upstream = made
                    made.handler.owner = self
                    made.handler.send(.head(upstreamHead))
                    if let context = self.context {
                        for part in waiting { perform(connection.requestPart(part), context: context) }
                    }
                    made.handler.flush()
                    resumeClientReads()
                case .failure(let refusal as AddressRefusal):
                    answerWithoutUpstream(
                        id, .forbidden, { .blockedAddress($0.decision, refusal) }, kind: .blocked,
                        reason: refusal.description)
                case .failure(let error):
                    failUpstream(id, reason: "cannot connect to \(target.authority): \(error)")
                }
            }
        }
    }

    /// Carries out the part of `decision` that happens before anything is sent: answers the client
    /// itself and returns nil when the request is refused (blocked, a warning not acknowledged, a
    /// redirect it cannot follow); otherwise returns the warning's resolution and, for a redirect
    /// (only when `canRedirect`), where to send the request instead.
    private func admit(
        _ decision: AuditPipeline.Decision, head: HTTPRequestHead, canRedirect: Bool, context: ChannelHandlerContext
    ) -> (warning: WarningResolution?, redirect: ProxyTarget?)? {
        switch decision.verdict.action {
        case .block:
            refuse(decision, .blocked(decision), kind: .blocked, warning: nil, head: head, context: context)
            return nil
        case .warn:
            let resolution = resolveWarning(decision, acknowledgement: head.headers)
            guard resolution.decision == .proceed else {
                refuse(
                    decision, .warning(decision), kind: .warningDeclined, warning: resolution, head: head,
                    context: context)
                return nil
            }
            return (resolution, nil)
        case .redirect:
            guard canRedirect, let target = decision.verdict.redirectTarget.flatMap(ProxyTarget.init(redirectURL:))
            else {
                refuse(
                    decision, .redirectUnavailable(decision), kind: .blocked, warning: nil, head: head,
                    context: context)
                return nil
            }
            return (nil, target)
        case .respond:
            guard canRedirect, let response = decision.verdict.response.flatMap(HandlerResponse.init) else {
                refuse(
                    decision, .responseUnavailable(decision, isTunnel: !canRedirect), kind: .blocked, warning: nil,
                    head: head, context: context)
                return nil
            }
            respond(decision, response, head: head, context: context)
            return nil
        case .allow, .pass:
            return (nil, nil)
        }
    }

    /// Answers a plain HTTP request with a rule's local response (its body or file); nothing is sent.
    private func respond(
        _ decision: AuditPipeline.Decision, _ response: HandlerResponse, head: HTTPRequestHead,
        context: ChannelHandlerContext
    ) {
        let body: Data = if case .data(let data) = response.body, head.method != .HEAD { data } else { Data() }
        _ = try? pipeline.finish(
            decision, warning: nil,
            outcome: OutcomeSnapshot(
                kind: .responded, status: response.status, bytes: body.count,
                durationMilliseconds: decision.elapsedMilliseconds))
        let closeAfter = head.closesAfterAnswer
        _ = connection.answer(closesAfter: closeAfter)
        var headers = HTTPHeaders(response.headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        if let rule = decision.decision.rule { headers.add(name: ProxyDenial.ruleHeader, value: rule) }
        if closeAfter { headers.replaceOrAdd(name: "Connection", value: "close") }
        let status = HTTPResponseStatus(statusCode: response.status)
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        if !body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// How the pipeline resolves the warning: proceed when the request acknowledges the rule, else
    /// as `--warn` says.
    private func resolveWarning(_ decision: AuditPipeline.Decision, acknowledgement headers: HTTPHeaders)
        -> WarningResolution
    {
        pipeline.resolveWarning(
            decision, acknowledgements: headers[canonicalForm: ProxyDenial.acknowledgeHeader].map(String.init),
            fallback: configuration.warnings == .allow ? .proceed : .cancel)
    }

    // MARK: Responses from the server

    /// Whether the client connection can take more without queueing.
    var isClientWritable: Bool { context?.channel.isWritable ?? false }

    func upstreamRead(_ part: HTTPClientResponsePart, from handler: UpstreamHandler) {
        guard let context, let upstream, upstream.handler === handler else { return }
        switch connection.responsePart(part) {
        case .none:
            break
        case .write(let part):
            context.write(wrapOutboundOut(part), promise: nil)
        case .writeInterim(let head):
            context.writeAndFlush(wrapOutboundOut(.head(head)), promise: nil)
        case .writeUpgrade(let head):
            context.write(wrapOutboundOut(.head(head)), promise: nil)
            context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        case .splice(let exchange):
            upgrade(exchange, upstream, context: context)
        case .end(let exchange, let trailers, let closesUpstream, let next):
            finish(exchange, kind: .response)
            if closesUpstream {
                upstream.channel.close(promise: nil)
                self.upstream = nil
            }
            // The state moved on before the end is written: writing it hands this handler the
            // next pipelined request at once, which must find the connection idle.
            context.writeAndFlush(wrapOutboundOut(.end(trailers)), promise: nil)
            if let next { follow(next) }
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
        guard upstream?.handler === handler else { return }
        upstream = nil
        let reason = error.map { "the server connection failed: \($0)" } ?? "the server closed the connection"
        switch connection.upstreamClosed() {
        case .none:
            break
        case .answerBadGateway(let id):
            failUpstream(id, reason: reason)
        case .cutShort(let exchange):
            // The response was cut short: the client must see it end abnormally.
            finish(exchange, kind: .failure, error: reason)
            context?.close(promise: nil)
        }
    }

    /// What follows an exchange once its answer is written: read the next request, or close.
    private func follow(_ next: ProxyConnection.Next) {
        guard let context else { return }
        switch next {
        case .awaitNextHead:
            http.connectionGuard.waitForNextHead()
            resumeClientReads()
        case .close:
            context.close(promise: nil)
        }
    }

    private func failUpstream(_ id: UUID, reason: String) {
        answerWithoutUpstream(
            id, .badGateway, { .upstream($0.decision, reason: reason) }, kind: .failure, reason: reason)
    }

    /// Answers a decided request the proxy could not, or must not, send: 502 when the server cannot
    /// be reached, 403 when one of its addresses is blocked.
    private func answerWithoutUpstream(
        _ id: UUID, _ status: HTTPResponseStatus, _ denial: (Exchange) -> ProxyDenial, kind: OutcomeSnapshot.Kind,
        reason: String
    ) {
        guard let context, let (exchange, next) = connection.answerWithoutUpstream(for: id) else { return }
        services.value.report("\(context.remoteAddressText): \(status.code) \(exchange.target.authority): \(reason)")
        finish(exchange, kind: kind, error: reason)
        let problem = denial(exchange)
        writeProblem(status, problem, close: false, rule: problem.rule, context: context)
        if let next {
            follow(next)
        } else {
            resumeClientReads()
        }
    }

    // MARK: Tunnels (CONNECT, and upgraded connections)

    private func openTunnel(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        guard let target = ProxyTarget(connectAuthority: head.uri) else {
            services.value.report("\(context.remoteAddressText): 400 bad CONNECT target '\(head.uri)'")
            _ = connection.answer(closesAfter: true)
            writeProblem(
                .badRequest, .problem("bad-request", "CONNECT takes HOST:PORT (got '\(head.uri)')"), close: false,
                context: context)
            return
        }
        let request = AuditRequest(
            method: "CONNECT", url: target.tunnelURL,
            headers: head.headers.map { AuditRequest.Header(name: $0.name, value: $0.value) })
        let decision = pipeline.decide(request, bodyBytes: nil)
        if let ports = configuration.connectPorts, !ports.contains(target.port) {
            let allowed = ports.sorted().map(String.init).joined(separator: ", ")
            refuse(
                decision,
                .problem(
                    "connect-port",
                    "CONNECT opens tunnels to port \(allowed) only (got \(target.port)); send plain HTTP requests to "
                        + "the proxy in absolute form instead"),
                kind: .blocked, warning: nil, head: head, context: context)
            return
        }
        guard let (warning, _) = admit(decision, head: head, canRedirect: false, context: context) else { return }
        connection.openTunnel(
            Exchange(decision: decision, warning: warning, target: target, forwardedURL: target.tunnelURL, head: head))
        upstream?.channel.close(promise: nil)
        upstream = nil
        resolveChecked(target, request: request, policy: decision.policy, context: context) { [self] resolved in
            guard let context = self.context else { return }
            let addresses: [SocketAddress]
            switch resolved {
            case .success(let found): addresses = found
            case .failure(let refusal as AddressRefusal):
                guard let exchange = connection.tunnelFailed() else { return }
                services.value.report("\(context.remoteAddressText): 403 CONNECT \(refusal)")
                finish(exchange, kind: .blocked, error: refusal.description)
                writeProblem(
                    .forbidden, .blockedAddress(decision, refusal), close: true, rule: refusal.verdict.rule?.id,
                    context: context)
                return
            case .failure(let error):
                return failTunnel(reason: "cannot connect to \(target.authority): \(error)")
            }
            services.value.upstreams.connect(target, addresses, context.eventLoop) {
                $0.eventLoop.makeSucceededVoidFuture()
            }
            .assumeIsolated()
            .whenComplete { [self] result in
                switch result {
                case .success(let channel):
                    guard let context = self.context else { return channel.close(promise: nil) }
                    switch connection.tunnelConnected() {
                    case .splice(let exchange): spliceTunnel(exchange, to: channel, context: context)
                    case .awaitRequestEnd: tunnelServer = channel
                    case .close: channel.close(promise: nil)
                    }
                case .failure(let error):
                    failTunnel(reason: "cannot connect to \(target.authority): \(error)")
                }
            }
        }
    }

    /// Answers a CONNECT whose server cannot be reached with 502, and closes.
    private func failTunnel(reason: String) {
        guard let exchange = connection.tunnelFailed() else { return }
        services.value.report("\(self.context?.remoteAddressText ?? "-"): 502 CONNECT \(reason)")
        finish(exchange, kind: .failure, error: reason)
        guard let context = self.context else { return }
        writeProblem(.badGateway, .upstream(exchange.decision, reason: reason), close: true, context: context)
    }

    /// Answers 200 to the CONNECT, then splices the client connection and `server`.
    private func spliceTunnel(_ exchange: Exchange, to server: Channel, context: ChannelHandlerContext) {
        let head = HTTPResponseHead(version: exchange.version, status: .ok, headers: ["Content-Length": "0"])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        splice(exchange, server: server, serverHTTPHandlers: [], context: context)
    }

    /// The end of a `101 Switching Protocols` from the server (already passed on): splices both
    /// connections.
    private func upgrade(_ exchange: Exchange, _ upstream: Upstream, context: ChannelHandlerContext) {
        self.upstream = nil
        upstream.handler.owner = nil
        let serverHandlers: [RemovableChannelHandler] =
            (try? [
                upstream.channel.pipeline.syncOperations.handler(type: HTTPRequestEncoder.self),
                upstream.channel.pipeline.syncOperations.handler(type: NIOHTTPRequestHeadersValidator.self),
                upstream.handler,
                upstream.channel.pipeline.syncOperations.handler(type: ByteToMessageHandler<HTTPResponseDecoder>.self),
            ]) ?? []
        splice(exchange, server: upstream.channel, serverHTTPHandlers: serverHandlers, context: context)
    }

    /// Replaces the HTTP handlers on both connections by a tunnel pair; the record is written when
    /// the tunnel closes. The decoders go last, so bytes they hold pass on into the tunnel.
    private func splice(
        _ exchange: Exchange, server: Channel, serverHTTPHandlers: [RemovableChannelHandler],
        context: ChannelHandlerContext
    ) {
        let account = TunnelHandler.Account { [self] account in
            var tunnelled = exchange
            tunnelled.bytesFromClient += account.fromClient
            tunnelled.bytesFromServer += account.fromServer
            tunnelled.status = tunnelled.status ?? 200
            finish(tunnelled, kind: tunnelled.isUpgrade ? .response : .tunnel)
        }
        let (clientSide, serverSide) = TunnelHandler.pair(account: account)
        do {
            try server.pipeline.syncOperations.addHandler(serverSide)
            try context.pipeline.syncOperations.addHandler(clientSide)
            for handler in serverHTTPHandlers { server.pipeline.syncOperations.removeHandler(handler, promise: nil) }
            let sync = context.pipeline.syncOperations
            sync.removeHandler(http.connectionGuard, promise: nil)
            sync.removeHandler(http.pipelining, promise: nil)
            sync.removeHandler(http.encoder, promise: nil)
            sync.removeHandler(self, promise: nil)
            sync.removeHandler(http.decoder, promise: nil)
            // Reads held back while the tunnel opened start again, now through the tunnel handlers.
            context.channel.read()
            server.read()
        } catch {
            server.close(promise: nil)
            context.close(promise: nil)
            account.closed()
        }
    }

    // MARK: Answers of the proxy's own

    private func refuse(
        _ decision: AuditPipeline.Decision, _ denial: ProxyDenial, kind: OutcomeSnapshot.Kind,
        warning: WarningResolution?, head: HTTPRequestHead, context: ChannelHandlerContext
    ) {
        _ = try? pipeline.finish(
            decision, warning: warning,
            outcome: OutcomeSnapshot(
                kind: kind, durationMilliseconds: decision.elapsedMilliseconds,
                error: OutcomeSnapshot.ErrorSnapshot(
                    domain: "AuditProxy", code: 403, description: denial.hint ?? denial.error)))
        // A CONNECT or a request whose body would follow closes after the answer.
        let closeAfter = head.method == .CONNECT || head.closesAfterAnswer
        let next = connection.answer(closesAfter: closeAfter, isConnect: head.method == .CONNECT)
        writeProblem(
            .forbidden, denial, close: false, announcesClose: closeAfter, rule: decision.decision.rule,
            context: context)
        // A CONNECT has no body: nothing more is read.
        if next == .close { context.close(promise: nil) }
    }

    private func writeProblem(
        _ status: HTTPResponseStatus, _ denial: ProxyDenial, close: Bool, announcesClose: Bool = false,
        rule: String? = nil, context: ChannelHandlerContext
    ) {
        let body = denial.json
        var headers: HTTPHeaders = [
            "Content-Type": "application/json", "Content-Length": String(body.utf8.count),
            "Cache-Control": "no-store",
        ]
        if let rule { headers.add(name: ProxyDenial.ruleHeader, value: rule) }
        if close || announcesClose || status == .badRequest { headers.add(name: "Connection", value: "close") }
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if close { written.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
    }

    // MARK: Records

    private func finish(_ exchange: Exchange, kind: OutcomeSnapshot.Kind, error: String? = nil) {
        _ = try? pipeline.finish(
            exchange.decision, warning: exchange.warning,
            outcome: OutcomeSnapshot(
                kind: kind, status: exchange.status, bytes: exchange.bytesFromServer,
                durationMilliseconds: exchange.decision.elapsedMilliseconds, forwardedURL: exchange.forwardedURL,
                error: error.map { OutcomeSnapshot.ErrorSnapshot(domain: "AuditProxy", code: 502, description: $0) },
                sentBytes: exchange.bytesFromClient))
    }

    // MARK: Connections upstream

    /// Connects to `target` at the addresses its host resolves to once, checked against `policy`
    /// for `request` (``resolveChecked(_:request:policy:context:then:)``).
    private func connect(
        to target: ProxyTarget, request: AuditRequest, policy: Policy, context: ChannelHandlerContext,
        then: @escaping (Result<Upstream, Error>) -> Void
    ) {
        resolveChecked(target, request: request, policy: policy, context: context) { [self] resolved in
            switch resolved {
            case .success(let addresses):
                guard let context = self.context else { return }
                connect(to: target, addresses: addresses, context: context, then: then)
            case .failure(let error):
                then(.failure(error))
            }
        }
    }

    private func connect(
        to target: ProxyTarget, addresses: [SocketAddress], context: ChannelHandlerContext,
        then: @escaping (Result<Upstream, Error>) -> Void
    ) {
        let authority = target.authority
        services.value.upstreams.connect(target, addresses, context.eventLoop) { channel in
            channel.eventLoop.makeCompletedFuture {
                let sync = channel.pipeline.syncOperations
                // The proxy sets the framing headers itself (transfer codings as the client sent
                // them), and frames chunks itself when `chunked` follows other codings.
                var encoding = HTTPRequestEncoder.Configuration()
                encoding.automaticallySetFramingHeaders = false
                try sync.addHandler(HTTPRequestEncoder(configuration: encoding))
                try sync.addHandler(
                    ByteToMessageHandler(
                        HTTPResponseDecoder(
                            leftOverBytesStrategy: .forwardBytes, informationalResponseStrategy: .forward)))
                try sync.addHandler(NIOHTTPRequestHeadersValidator())
                try sync.addHandler(UpstreamHandler())
            }
        }
        .assumeIsolated()
        .whenComplete { result in
            then(
                result.flatMap { channel in
                    Result {
                        Upstream(
                            authority: authority, channel: channel,
                            handler: try channel.pipeline.syncOperations.handler(type: UpstreamHandler.self))
                    }
                })
        }
    }

    /// Closes the client connection after an answer without losing it: the output first (the client
    /// reads the answer, then the end), the whole connection a moment later. Closing at once while
    /// the client's pipelined bytes are unread would reset the connection, and a reset can destroy
    /// the answer before the client reads it.
    static func closeGracefully(_ channel: Channel) {
        channel.close(mode: .output).whenFailure { _ in channel.close(promise: nil) }
        channel.eventLoop.scheduleTask(in: .seconds(2)) { channel.close(promise: nil) }
    }

    private func resumeClientReads() {
        guard let context, connection.resumeReading(isUpstreamWritable: upstream?.handler.isWritable ?? false) else {
            return
        }
        context.read()
    }
}

extension HTTPRequestHead {
    /// Whether the connection closes after the proxy answers this request itself: when the client
    /// asked for it, when it waits for `100 Continue` before a body it will now never send, or when
    /// it asked for an upgrade (the request decoder reads no HTTP after an upgrade request, so a
    /// request pipelined behind it could be neither decided nor answered). The body of any other
    /// request is read and dropped, and the next request on the connection is served.
    var closesAfterAnswer: Bool {
        !isKeepAlive || (hasBody && expectsContinue) || headers.contains(name: "upgrade")
    }

    /// Whether the request waits for `100 Continue` before sending its body.
    var expectsContinue: Bool {
        headers[canonicalForm: "expect"].contains { $0.lowercased() == "100-continue" }
    }

    /// Whether a body follows the head.
    var hasBody: Bool {
        if let length = headers.first(name: "content-length"), let bytes = Int(length) { return bytes > 0 }
        return headers.contains(name: "transfer-encoding")
    }
}
