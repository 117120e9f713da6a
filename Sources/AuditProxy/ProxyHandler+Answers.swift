import AuditPipeline
import AuditReport
import Foundation
import NIOCore
import NIOHTTP1

/// What happens before anything is sent: the verdict carried out, and the answers the proxy gives
/// itself (refusals, a rule's response, problems).
extension ProxyHandler {
    /// What is left to do once the part of an admission that happens before sending is carried out.
    enum Carried {
        /// The proxy answered the client itself (a refusal, a local response).
        case answered
        /// Send the request, to a redirect rule's target if there is one.
        case send(redirectedTo: ProxyTarget?)
    }

    /// Carries out the part of `audited`'s admission that happens before anything is sent: resolves a
    /// warning by the client's acknowledgement or `--warn`, and answers the client itself when the
    /// request is refused or answered locally.
    func carryOut(_ audited: AuditedRequest, head: HTTPRequestHead, context: ChannelHandlerContext) -> Carried {
        var admission = audited.admission
        if admission == .warn {
            admission = audited.resolveWarning(
                acknowledgements: head.headers[canonicalForm: Denial.acknowledgeHeader].map(String.init),
                fallback: configuration.warnings == .allow ? .proceed : .cancel)
        }
        let decision = audited.decision
        switch admission {
        case .send(nil):
            return .send(redirectedTo: nil)
        case .send(let target?):
            guard let redirected = ProxyTarget(url: target, allowsTLS: configuration.reachesTLSServers) else {
                refuse(
                    audited,
                    .redirectUnavailable(decision, because: Denial.proxyUnavailable(decision, isTunnel: false)),
                    head: head, context: context)
                return .answered
            }
            return .send(redirectedTo: redirected)
        case .respond(let local):
            // A handler's response needs the app that has the handler: refused here.
            guard let response = HandlerResponse(local) else {
                refuse(
                    audited,
                    .responseUnavailable(decision, because: Denial.proxyUnavailable(decision, isTunnel: false)),
                    head: head, context: context)
                return .answered
            }
            respond(audited, response, head: head, context: context)
            return .answered
        case .refuse(let refusal):
            refuse(
                audited, denial(for: refusal, decision, head: head), kind: refusal.outcomeKind, head: head,
                context: context)
            return .answered
        case .warn:
            refuse(audited, .warning(decision), kind: .warningDeclined, head: head, context: context)
            return .answered
        }
    }

    /// The proxy's answer to `refusal`.
    private func denial(for refusal: Refusal, _ decision: AuditPipeline.Decision, head: HTTPRequestHead) -> Denial {
        .refusal(
            refusal.reason, decision, unavailable: Denial.proxyUnavailable(decision, isTunnel: head.method == .CONNECT))
    }

    /// Answers a plain HTTP request with a rule's local response (its body or file); nothing is sent.
    func respond(
        _ audited: AuditedRequest, _ response: HandlerResponse, head: HTTPRequestHead, context: ChannelHandlerContext
    ) {
        let body: Data = if case .data(let data) = response.body, head.method != .HEAD { data } else { Data() }
        audited.finish(Outcome(.responded, status: response.status, bytes: body.count))
        let closeAfter = head.closesAfterAnswer
        _ = connection.answer(closesAfter: closeAfter, pausesDecoder: head.asksForUpgrade)
        var headers = HTTPHeaders(response.headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
        if let rule = audited.decision.decision.rule { headers.add(name: Denial.ruleHeader, value: rule) }
        if closeAfter { headers.replaceOrAdd(name: "Connection", value: "close") }
        let status = HTTPResponseStatus(statusCode: response.status)
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        if !body.isEmpty {
            context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: body)))), promise: nil)
        }
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
    }

    /// Refuses `audited` with `denial` (403), recorded as `kind`; nothing is sent.
    func refuse(
        _ audited: AuditedRequest, _ denial: Denial, kind: OutcomeSnapshot.Kind = .blocked,
        head: HTTPRequestHead, context: ChannelHandlerContext
    ) {
        audited.finish(
            Outcome(kind, failure: .init(domain: "AuditProxy", code: 403, description: denial.hint ?? denial.error)))
        // A CONNECT or a request whose body would follow closes after the answer.
        let closeAfter = head.method == .CONNECT || head.closesAfterAnswer
        let next = connection.answer(
            closesAfter: closeAfter, isConnect: head.method == .CONNECT, pausesDecoder: head.asksForUpgrade)
        writeProblem(
            .forbidden, denial, close: false, announcesClose: closeAfter, rule: audited.decision.decision.rule,
            context: context)
        // A CONNECT has no body: nothing more is read.
        if next == .close { context.close(promise: nil) }
    }

    func writeProblem(
        _ status: HTTPResponseStatus, _ denial: Denial, close: Bool, announcesClose: Bool = false,
        rule: String? = nil, context: ChannelHandlerContext
    ) {
        let body = denial.json
        var headers: HTTPHeaders = [
            "Content-Type": "application/json", "Content-Length": String(body.utf8.count),
            "Cache-Control": "no-store",
        ]
        if let rule { headers.add(name: Denial.ruleHeader, value: rule) }
        if close || announcesClose || status == .badRequest { headers.add(name: "Connection", value: "close") }
        context.write(
            wrapOutboundOut(.head(HTTPResponseHead(version: .http1_1, status: status, headers: headers))), promise: nil)
        context.write(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(string: body)))), promise: nil)
        let written = context.writeAndFlush(wrapOutboundOut(.end(nil)))
        if close { written.assumeIsolated().whenComplete { _ in context.close(promise: nil) } }
    }
}
