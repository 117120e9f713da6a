import AuditPolicy
import NIOCore
import NIOHTTP1

/// CONNECT tunnels, and connections spliced after an upgrade.
extension ProxyHandler {

    func openTunnel(_ head: HTTPRequestHead, context: ChannelHandlerContext) {
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
        // A tunnel carries bytes only: a redirect or a local response is refused.
        let audited = pipeline.admit(request, bodyBytes: nil, capabilities: [])
        let decision = audited.decision
        // Inside an intercepted tunnel every request is decided: the port limit is for spliced ones.
        let isIntercepted = intercepts(target, policy: decision.policy)
        if let ports = configuration.connectPorts, !ports.contains(target.port), !isIntercepted {
            let allowed = ports.sorted().map(String.init).joined(separator: ", ")
            refuse(
                audited,
                .problem(
                    "connect-port",
                    "CONNECT opens tunnels to port \(allowed) only (got \(target.port)); send plain HTTP requests to "
                        + "the proxy in absolute form instead"),
                head: head, context: context)
            return
        }
        guard case .send = carryOut(audited, head: head, context: context) else { return }
        connection.openTunnel(Exchange(audited, target: target, destination: .url(target.tunnelURL), head: head))
        upstream?.channel.close(promise: nil)
        upstream = nil
        // An intercepted tunnel connects to the server per request inside it, once each is decided.
        if isIntercepted {
            switch connection.tunnelConnected() {
            case .splice(let exchange): intercept(exchange, context: context)
            case .awaitRequestEnd: tunnelWay = .intercept
            case .close: break
            }
            return
        }
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
                    case .awaitRequestEnd: tunnelWay = .splice(channel)
                    case .close: channel.close(promise: nil)
                    }
                case .failure(let error):
                    failTunnel(reason: "cannot connect to \(target.authority): \(SocketErrorReason.of(error))")
                }
            }
        }
    }

    /// Answers a CONNECT whose server cannot be reached with 502, and closes.
    func failTunnel(reason: String) {
        guard let exchange = connection.tunnelFailed() else { return }
        services.value.report("\(self.context?.remoteAddressText ?? "-"): 502 CONNECT \(reason)")
        finish(exchange, kind: .failure, error: reason)
        guard let context = self.context else { return }
        writeProblem(.badGateway, .upstream(exchange.decision, reason: reason), close: true, context: context)
    }

    /// Removes this handler and the client connection's HTTP handlers, once the handlers that take
    /// the connection over are in place after them. The decoder goes last, so that the bytes it holds
    /// pass on to them.
    func removeHTTPHandlers(context: ChannelHandlerContext) {
        let sync = context.pipeline.syncOperations
        sync.removeHandler(http.connectionGuard, promise: nil)
        sync.removeHandler(http.pipelining, promise: nil)
        sync.removeHandler(http.encoder, promise: nil)
        sync.removeHandler(self, promise: nil)
        sync.removeHandler(http.decoder, promise: nil)
    }

    /// Answers 200 to the CONNECT, then splices the client connection and `server`.
    func spliceTunnel(_ exchange: Exchange, to server: Channel, context: ChannelHandlerContext) {
        let head = HTTPResponseHead(version: exchange.version, status: .ok, headers: ["Content-Length": "0"])
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        splice(exchange, server: server, serverHTTPHandlers: [], context: context)
    }

    /// The end of a `101 Switching Protocols` from the server (already passed on): splices both
    /// connections.
    func upgrade(_ exchange: Exchange, _ upstream: Upstream, context: ChannelHandlerContext) {
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
    func splice(
        _ exchange: Exchange, server: Channel, serverHTTPHandlers: [RemovableChannelHandler],
        context: ChannelHandlerContext
    ) {
        let account = TunnelHandler.Account { [self] account in
            var tunnelled = exchange
            tunnelled.bytesFromClient += account.fromClient
            tunnelled.bytesFromServer += account.fromServer
            tunnelled.status = tunnelled.status ?? 200
            if let failure = account.failure {
                services.value.report("\(exchange.target.authority): CONNECT cut off: \(failure)")
                finish(tunnelled, kind: .failure, error: failure)
            } else {
                finish(tunnelled, kind: tunnelled.isUpgrade ? .response : .tunnel)
            }
            // An upgrade inside an intercepted tunnel ends the tunnel with it.
            finishTunnel()
        }
        let (clientSide, serverSide) = TunnelHandler.pair(account: account)
        do {
            try server.pipeline.syncOperations.addHandler(serverSide)
            // A tunnel to 443 carries TLS or nothing: plain bytes there would be requests nobody decided.
            if !exchange.isUpgrade, exchange.target.port == 443 {
                try context.pipeline.syncOperations.addHandler(TLSRecordCheck())
            }
            try context.pipeline.syncOperations.addHandler(clientSide)
            for handler in serverHTTPHandlers { server.pipeline.syncOperations.removeHandler(handler, promise: nil) }
            removeHTTPHandlers(context: context)
            // Reads held back while the tunnel opened start again, now through the tunnel handlers.
            context.channel.read()
            server.read()
        } catch {
            server.close(promise: nil)
            context.close(promise: nil)
            account.closed()
        }
    }
}
