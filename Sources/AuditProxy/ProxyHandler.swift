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
/// request upstream with both bodies streamed under backpressure, or opens a CONNECT tunnel.
///
/// A plain HTTP request is decided on everything it carries (method, absolute URL, headers). A
/// CONNECT is decided on what a proxy sees of it: `https://HOST[:PORT]` and its headers.
final class ProxyHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// One request and what became of it.
    private final class Exchange {
        let decision: AuditPipeline.Decision
        let warning: WarningResolution?
        let target: ProxyTarget
        let forwardedURL: String
        let version: HTTPVersion
        let isClientKeepAlive: Bool
        let expectsContinue: Bool
        /// Whether the request's body goes up in chunks the proxy frames itself: `chunked` after other
        /// transfer codings (`gzip, chunked`), which the encoder does not frame.
        let framesChunks: Bool
        var isRequestEnded = false
        var isResponseStarted = false
        var isResponseEnded = false
        var status: Int?
        var bytesFromServer = 0
        var bytesFromClient = 0
        var keepsUpstream = true
        var isUpgrade = false

        init(
            decision: AuditPipeline.Decision, warning: WarningResolution?, target: ProxyTarget, forwardedURL: String,
            head: HTTPRequestHead
        ) {
            self.decision = decision
            self.warning = warning
            self.target = target
            self.forwardedURL = forwardedURL
            self.version = head.version
            // After an upgrade request that is not spliced (refused by the server, or h2c, which is
            // not made) the connection closes: its decoder reads no more requests.
            self.isClientKeepAlive = head.isKeepAlive && !head.headers.contains(name: "upgrade")
            self.expectsContinue = head.expectsContinue
            let codings = ProxyHandler.transferCodings(head.headers)
            self.framesChunks = codings.count > 1 && codings.last == "chunked"
        }
    }

    /// An upstream connection, kept between requests to the same server.
    private struct Upstream {
        let authority: String
        let channel: Channel
        let handler: UpstreamHandler
    }

    private enum State {
        /// Waiting for a request head.
        case idle
        /// The request was answered by the proxy; its body (if any) is read and dropped.
        case answered(closeAfter: Bool)
        /// Connecting upstream; the request parts that arrive meanwhile wait.
        case connecting(Exchange, waiting: [HTTPServerRequestPart])
        /// The request goes upstream and the response comes back.
        case forwarding(Exchange, Upstream)
        /// A CONNECT is being opened.
        case openingTunnel
        /// The connection is closing or became a tunnel.
        case done
    }

    private let services: ServicesBox
    private let http: ClientHTTPHandlers
    private var context: ChannelHandlerContext?
    private var state = State.idle
    private var upstream: Upstream?
    private var pendingRead = false

    /// The services, boxed so the handler can pass them to Sendable closures.
    private final class ServicesBox: Sendable {
        let value: ProxyServices
        init(_ value: ProxyServices) { self.value = value }
    }

    init(services: ProxyServices, http: ClientHTTPHandlers) {
        self.services = ServicesBox(services)
        self.http = http
    }

    var pipeline: AuditPipeline { services.value.pipeline }
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
        switch (state, part) {
        case (.idle, .head(let head)):
            http.connectionGuard.headReceived()
            if head.method == .CONNECT {
                openTunnel(head, context: context)
            } else {
                startExchange(head, context: context)
            }
        case (.answered(let closeAfter), .end):
            if closeAfter {
                state = .done
                Self.closeGracefully(context.channel)
            } else {
                state = .idle
                http.connectionGuard.waitForNextHead()
            }
        case (.answered, _):
            break  // the body of a request already answered
        case (.connecting(let exchange, var waiting), _):
            if case .end = part { exchange.isRequestEnded = true }
            waiting.append(part)
            state = .connecting(exchange, waiting: waiting)
        case (.forwarding(let exchange, let upstream), _):
            forward(part, exchange, upstream)
        case (.idle, _), (.openingTunnel, _), (.done, _):
            break
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        if case .forwarding(_, let upstream) = state { upstream.handler.flush() }
        context.fireChannelReadComplete()
    }

    func read(context: ChannelHandlerContext) {
        switch state {
        case .connecting, .openingTunnel:
            pendingRead = true
        case .forwarding(_, let upstream) where !upstream.handler.isWritable:
            pendingRead = true
        default:
            context.read()
        }
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        // The kept upstream connection reads again, whether or not a request is under way: a read it
        // held back at the end of the last response must not stall the next one.
        if context.channel.isWritable { upstream?.handler.resumeReading() }
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        switch state {
        case .connecting(let exchange, _):
            finish(exchange, kind: .cancelled, error: "the client closed the connection")
        case .forwarding(let exchange, _):
            finish(exchange, kind: .cancelled, error: "the client closed the connection")
        default:
            break
        }
        state = .done
        upstream?.channel.close(promise: nil)
        upstream = nil
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
        guard case .idle = state else {
            context.close(promise: nil)
            return
        }
        state = .done
        writeProblem(status, .problem(kind, "malformed request: \(parserError)"), close: true, context: context)
    }

    // MARK: Plain HTTP

    private func startExchange(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        guard ProxyTarget.isAbsoluteHTTP(head.uri) else {
            services.value.report("\(context.remoteAddressText): 400 not a proxy request: \(head.method) \(head.uri)")
            state = .answered(closeAfter: true)
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
            state = .answered(closeAfter: true)
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
        exchange.isUpgrade = head.headers.contains(name: "upgrade") && !Self.isH2CUpgrade(head.headers)
        let upstreamHead = Self.upstreamHead(head, target: target)
        // What is sent, for the check of the addresses it goes to: the redirect target, if any.
        let sent =
            redirected == nil
            ? request
            : AuditRequest(
                method: request.method, url: decision.verdict.redirectTarget ?? request.url, headers: request.headers)
        if let upstream, upstream.authority == target.authority, upstream.channel.isActive,
            Self.addressRefusal(
                of: sent, host: target.host, addresses: [upstream.channel.remoteAddress?.ipAddress].compactMap { $0 },
                pipeline: pipeline, policy: decision.policy) == nil
        {
            state = .forwarding(exchange, upstream)
            upstream.handler.owner = self
            upstream.handler.send(.head(upstreamHead))
            if context.channel.isWritable { upstream.handler.resumeReading() }
            return
        }
        upstream?.channel.close(promise: nil)
        upstream = nil
        state = .connecting(exchange, waiting: [.head(head)])
        connect(to: target, request: sent, policy: decision.policy, context: context) { [self] result in
            guard case .connecting(let pending, let waiting) = state, pending === exchange else {
                if case .success(let made) = result { made.channel.close(promise: nil) }
                return
            }
            switch result {
            case .success(let made):
                upstream = made
                made.handler.owner = self
                state = .forwarding(exchange, made)
                made.handler.send(.head(upstreamHead))
                for part in waiting.dropFirst() { forward(part, exchange, made) }
                made.handler.flush()
                resumeClientReads()
            case .failure(let refusal as AddressRefusal):
                answerWithoutUpstream(
                    exchange, .forbidden, .blockedAddress(exchange.decision, refusal), kind: .blocked,
                    reason: refusal.description)
            case .failure(let error):
                failUpstream(exchange, reason: "cannot connect to \(target.authority): \(error)")
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
        state = .answered(closeAfter: closeAfter)
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

    private func forward(_ part: HTTPServerRequestPart, _ exchange: Exchange, _ upstream: Upstream) {
        guard !exchange.isResponseEnded else {
            // The server answered before the whole request came: drop the rest, then go idle.
            if case .end = part { endExchange(exchange) }
            return
        }
        switch part {
        case .head:
            break
        case .body(let buffer):
            exchange.bytesFromClient += buffer.readableBytes
            guard exchange.framesChunks, buffer.readableBytes > 0 else {
                upstream.handler.send(.body(.byteBuffer(buffer)))
                return
            }
            var chunk = ByteBuffer(string: String(buffer.readableBytes, radix: 16) + "\r\n")
            var data = buffer
            chunk.writeBuffer(&data)
            chunk.writeString("\r\n")
            upstream.handler.send(.body(.byteBuffer(chunk)))
        case .end(let trailers):
            exchange.isRequestEnded = true
            if exchange.framesChunks {
                var last = "0\r\n"
                for (name, value) in trailers ?? [:] { last += "\(name): \(value)\r\n" }
                upstream.handler.send(.body(.byteBuffer(ByteBuffer(string: last + "\r\n"))))
                upstream.handler.send(.end(nil), flush: true)
            } else {
                upstream.handler.send(.end(trailers), flush: true)
            }
        }
    }

    // MARK: Responses from the server

    /// Whether the client connection can take more without queueing.
    var isClientWritable: Bool { context?.channel.isWritable ?? false }

    func upstreamRead(_ part: HTTPClientResponsePart, from handler: UpstreamHandler) {
        guard let context, case .forwarding(let exchange, let upstream) = state, upstream.handler === handler else {
            return
        }
        switch part {
        case .head(let head):
            if head.status == .switchingProtocols, exchange.isUpgrade {
                // Passed on now; the connections are spliced at this response's end, once the
                // server's decoder has nothing more of HTTP to hand on.
                exchange.isResponseStarted = true
                exchange.status = Int(head.status.code)
                var headers = Self.endToEnd(head.headers, keepsUpgrade: true)
                headers.replaceOrAdd(name: "Connection", value: "Upgrade")
                let response = HTTPResponseHead(version: exchange.version, status: head.status, headers: headers)
                context.write(wrapOutboundOut(.head(response)), promise: nil)
                context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
                return
            }
            if head.status.code / 100 == 1 {
                // An informational response (100 Continue, 103 Early Hints) goes on as it is.
                let interim = HTTPResponseHead(
                    version: exchange.version, status: head.status,
                    headers: Self.endToEnd(head.headers, keepsUpgrade: false))
                context.writeAndFlush(wrapOutboundOut(.head(interim)), promise: nil)
                return
            }
            exchange.isResponseStarted = true
            exchange.status = Int(head.status.code)
            exchange.keepsUpstream = head.isKeepAlive
            var headers = Self.endToEnd(head.headers, keepsUpgrade: false)
            // The response encoder frames the body: chunked when the server chunked it.
            if Self.transferCodings(head.headers).last == "chunked" {
                headers.add(name: "Transfer-Encoding", value: "chunked")
            }
            if !exchange.isClientKeepAlive { headers.replaceOrAdd(name: "Connection", value: "close") }
            let response = HTTPResponseHead(version: exchange.version, status: head.status, headers: headers)
            context.write(wrapOutboundOut(.head(response)), promise: nil)
        case .body(let buffer):
            exchange.bytesFromServer += buffer.readableBytes
            context.write(wrapOutboundOut(.body(.byteBuffer(buffer))), promise: nil)
        case .end(let trailers):
            if exchange.status == 101, exchange.isUpgrade {
                return upgrade(exchange, upstream, context: context)
            }
            exchange.isResponseEnded = true
            finish(exchange, kind: .response)
            if !exchange.keepsUpstream {
                upstream.channel.close(promise: nil)
                self.upstream = nil
            }
            // The state moves on before the end is written: writing it hands this handler the next
            // pipelined request at once, which must find the connection idle.
            let isOver = exchange.isRequestEnded
            if isOver { leave(exchange) }
            context.writeAndFlush(wrapOutboundOut(.end(trailers)), promise: nil)
            if isOver { afterLeaving(exchange) }
        }
    }

    func upstreamReadComplete(from handler: UpstreamHandler) {
        context?.flush()
    }

    func upstreamBecameWritable(_ handler: UpstreamHandler) {
        guard case .forwarding(_, let upstream) = state, upstream.handler === handler else { return }
        resumeClientReads()
    }

    func upstreamClosed(_ handler: UpstreamHandler, error: Error?) {
        if upstream?.handler === handler { upstream = nil }
        guard case .forwarding(let exchange, let upstream) = state, upstream.handler === handler else { return }
        guard !exchange.isResponseEnded else { return }
        let reason = error.map { "the server connection failed: \($0)" } ?? "the server closed the connection"
        guard exchange.isResponseStarted else { return failUpstream(exchange, reason: reason) }
        // The response was cut short: the client must see it end abnormally.
        finish(exchange, kind: .failure, error: reason)
        state = .done
        context?.close(promise: nil)
    }

    /// The exchange is over on both sides: wait for the next request, or close.
    private func endExchange(_ exchange: Exchange) {
        leave(exchange)
        afterLeaving(exchange)
    }

    /// The state after `exchange`, set before its last response part is written: idle for the next
    /// request, or done.
    private func leave(_ exchange: Exchange) {
        if exchange.isClientKeepAlive {
            state = .idle
            http.connectionGuard.waitForNextHead()
        } else {
            state = .done
        }
    }

    /// What follows ``leave(_:)`` once the response is written: close, or read the next request.
    private func afterLeaving(_ exchange: Exchange) {
        guard let context else { return }
        if exchange.isClientKeepAlive {
            resumeClientReads()
        } else {
            context.close(promise: nil)
        }
    }

    private func failUpstream(_ exchange: Exchange, reason: String) {
        answerWithoutUpstream(
            exchange, .badGateway, .upstream(exchange.decision, reason: reason), kind: .failure, reason: reason)
    }

    /// Answers a decided request the proxy could not, or must not, send: 502 when the server cannot
    /// be reached, 403 when one of its addresses is blocked.
    private func answerWithoutUpstream(
        _ exchange: Exchange, _ status: HTTPResponseStatus, _ denial: ProxyDenial, kind: OutcomeSnapshot.Kind,
        reason: String
    ) {
        guard let context else { return }
        services.value.report("\(context.remoteAddressText): \(status.code) \(exchange.target.authority): \(reason)")
        finish(exchange, kind: kind, error: reason)
        // As for a response: the state moves on before the answer is written.
        if exchange.isRequestEnded {
            leave(exchange)
        } else {
            state = .answered(closeAfter: !exchange.isClientKeepAlive || exchange.expectsContinue)
        }
        writeProblem(status, denial, close: false, rule: denial.rule, context: context)
        if exchange.isRequestEnded {
            afterLeaving(exchange)
        } else {
            resumeClientReads()
        }
    }

    // MARK: Tunnels (CONNECT, and upgraded connections)

    private func openTunnel(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
        guard let target = ProxyTarget(connectAuthority: head.uri) else {
            services.value.report("\(context.remoteAddressText): 400 bad CONNECT target '\(head.uri)'")
            state = .answered(closeAfter: true)
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
        state = .openingTunnel
        let exchange = Exchange(
            decision: decision, warning: warning, target: target, forwardedURL: target.tunnelURL, head: head)
        upstream?.channel.close(promise: nil)
        upstream = nil
        resolveChecked(target, request: request, policy: decision.policy, context: context) { [self] resolved in
            guard let context = self.context else { return }
            let addresses: [SocketAddress]
            switch resolved {
            case .success(let found): addresses = found
            case .failure(let refusal as AddressRefusal):
                services.value.report("\(context.remoteAddressText): 403 CONNECT \(refusal)")
                finish(exchange, kind: .blocked, error: refusal.description)
                state = .done
                writeProblem(
                    .forbidden, .blockedAddress(decision, refusal), close: true, rule: refusal.verdict.rule?.id,
                    context: context)
                return
            case .failure(let error):
                return failTunnel(exchange, reason: "cannot connect to \(target.authority): \(error)")
            }
            ClientBootstrap(group: context.eventLoop)
                .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
                .connectTimeout(.seconds(10))
                .resolver(FixedResolver(addresses: addresses, eventLoop: context.eventLoop))
                .connect(host: target.host, port: target.port)
                .assumeIsolated()
                .whenComplete { [self] result in
                    switch result {
                    case .success(let channel):
                        spliceTunnel(exchange, to: channel)
                    case .failure(let error):
                        failTunnel(exchange, reason: "cannot connect to \(target.authority): \(error)")
                    }
                }
        }
    }

    /// Answers a CONNECT whose server cannot be reached with 502, and closes.
    private func failTunnel(_ exchange: Exchange, reason: String) {
        services.value.report("\(self.context?.remoteAddressText ?? "-"): 502 CONNECT \(reason)")
        finish(exchange, kind: .failure, error: reason)
        state = .done
        guard let context = self.context else { return }
        writeProblem(.badGateway, .upstream(exchange.decision, reason: reason), close: true, context: context)
    }

    /// Answers 200 to the CONNECT, then splices the client connection and `server`.
    private func spliceTunnel(_ exchange: Exchange, to server: Channel) {
        guard let context, context.channel.isActive else {
            server.close(promise: nil)
            finish(exchange, kind: .cancelled, error: "the client closed the connection")
            return
        }
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
        state = .done
        let isUpgrade = exchange.isUpgrade
        let account = TunnelHandler.Account { [self] account in
            exchange.bytesFromClient += account.fromClient
            exchange.bytesFromServer += account.fromServer
            exchange.status = exchange.status ?? 200
            finish(exchange, kind: isUpgrade ? .response : .tunnel)
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
        state = .answered(closeAfter: closeAfter)
        writeProblem(
            .forbidden, denial, close: false, announcesClose: closeAfter, rule: decision.decision.rule,
            context: context)
        if head.method == .CONNECT {
            // The CONNECT's end has come already (it has no body); nothing more is read.
            state = .done
            context.close(promise: nil)
        }
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
        ClientBootstrap(group: context.eventLoop)
            .channelOption(ChannelOptions.socketOption(.tcp_nodelay), value: 1)
            .connectTimeout(.seconds(10))
            .resolver(FixedResolver(addresses: addresses, eventLoop: context.eventLoop))
            .channelInitializer { channel in
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
            .connect(host: target.host, port: target.port)
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
        guard pendingRead, let context else { return }
        switch state {
        case .connecting, .openingTunnel: return
        case .forwarding(_, let upstream) where !upstream.handler.isWritable: return
        default: break
        }
        pendingRead = false
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
