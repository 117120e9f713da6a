import AuditPipeline
import AuditReport
import Foundation
import NIOCore
import NIOHTTP1

/// What happens before anything is sent: the verdict carried out, and the answers the proxy gives
/// itself (refusals, a rule's response, problems).
extension ProxyHandler {
    /// Carries out the part of `decision` that happens before anything is sent: answers the client
    /// itself and returns nil when the request is refused (blocked, a warning not acknowledged, a
    /// redirect it cannot follow); otherwise returns the warning's resolution and, for a redirect
    /// (only when `canRedirect`), where to send the request instead.
    func admit(
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
    func respond(
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
        _ = connection.answer(closesAfter: closeAfter, pausesDecoder: head.asksForUpgrade)
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
    func resolveWarning(_ decision: AuditPipeline.Decision, acknowledgement headers: HTTPHeaders)
        -> WarningResolution
    {
        pipeline.resolveWarning(
            decision, acknowledgements: headers[canonicalForm: ProxyDenial.acknowledgeHeader].map(String.init),
            fallback: configuration.warnings == .allow ? .proceed : .cancel)
    }

    func refuse(
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
        let next = connection.answer(
            closesAfter: closeAfter, isConnect: head.method == .CONNECT, pausesDecoder: head.asksForUpgrade)
        writeProblem(
            .forbidden, denial, close: false, announcesClose: closeAfter, rule: decision.decision.rule,
            context: context)
        // A CONNECT has no body: nothing more is read.
        if next == .close { context.close(promise: nil) }
    }

    func writeProblem(
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
}
