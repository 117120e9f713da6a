import AuditPipeline
import AuditPolicy
import AuditReport
import Foundation

/// Decides gateways' authorization checks with the one pipeline every front-end uses: each check is
/// admitted (canonical URL, every field), its admission carried out as an ``AuthzAnswer``, and
/// finished with one record of kind `authz`.
///
/// ```swift
/// let decider = AuthzDecider(pipeline: pipeline)
/// let answer = decider.decide(AuthzCheck(
///     contract: .nginx, method: "GET", scheme: "https", authority: "shop.test", target: "/admin", headers: []))
/// // answer.isAllowed == false, answer.status == 403, answer.body: the JSON audit proxy sends
/// ```
public final class AuthzDecider: Sendable {
    /// The pipeline every check goes through.
    public let pipeline: AuditPipeline
    /// What an unacknowledged warning does: `cancel` answers 403 with the acknowledge hint,
    /// `proceed` allows the request (recorded as the default's decision).
    public let warnings: WarningResolution.Decision
    /// The bound on checks in flight.
    public let gate: CheckGate

    /// The header telling the upstream (and, on a denial, the client) the verdict.
    public static let verdictHeader = "X-Request-Audit-Verdict"
    /// The header carrying the status of a denial an nginx gateway can only pass on as 401 or 403.
    public static let statusHeader = "X-Request-Audit-Status"
    /// The header carrying the request's id (its record's).
    public static let idHeader = "X-Request-Audit-ID"
    /// The header carrying a denial's body to nginx, which never passes its authorization
    /// service's body on (the `error_page` recipe in docs/authz.md answers with it).
    public static let denialHeader = "X-Request-Audit-Denial"

    /// A decider for `pipeline`, with at most `maximumConcurrentChecks` checks in flight.
    public init(
        pipeline: AuditPipeline, warnings: WarningResolution.Decision = .cancel, maximumConcurrentChecks: Int = 1_024
    ) {
        self.pipeline = pipeline
        self.warnings = warnings
        self.gate = CheckGate(limit: maximumConcurrentChecks)
    }

    /// Decides `check` and records it, or sheds it (503, not decided) when the gate is full.
    public func decide(_ check: AuthzCheck) -> AuthzAnswer {
        guard gate.enter() else { return Self.busy }
        defer { gate.leave() }
        return decideAdmitted(check)
    }

    /// The answer to a check shed by the gate.
    public static let busy = AuthzAnswer(
        isAllowed: false, status: 503,
        headers: [.init(name: "Content-Type", value: "application/json"), .init(name: "Retry-After", value: "1")],
        body: Array(
            Denial.problem("busy", "audit authz has as many checks in flight as it takes; try again later").json.utf8))

    /// The answer to a check that comes once the listener is stopping.
    public static let stopping = AuthzAnswer(
        isAllowed: false, status: 503,
        headers: [.init(name: "Content-Type", value: "application/json"), .init(name: "Retry-After", value: "1")],
        body: Array(Denial.problem("stopping", "audit authz is stopping; ask another replica").json.utf8))

    private func decideAdmitted(_ check: AuthzCheck) -> AuthzAnswer {
        let request = check.request
        let audited = pipeline.admit(
            request, bodyBytes: check.bodyBytes, gateway: (check.contract.rawValue, check.requestID))
        let decision = audited.decision
        if let problem = check.problem {
            return finish(
                audited, deny(400, .problem("bad-request", "malformed \(check.contract.rawValue) check: \(problem)")),
                contract: check.contract)
        }
        var admission = audited.admission
        if admission == .warn {
            let acknowledgements = request.headers.lazy
                .filter { $0.name.lowercased() == Denial.acknowledgeHeader.lowercased() }.map(\.value)
            admission = audited.resolveWarning(acknowledgements: acknowledgements, fallback: warnings)
        }
        switch admission {
        case .send(nil):
            return finish(
                audited, allow(decision, acknowledged: audited.warning?.decidedBy == .acknowledged),
                contract: check.contract)
        case .send(let target?):
            var answer = deny(302, nil, decision)
            answer.headers.append(.init(name: "Location", value: target))
            return finish(audited, answer, contract: check.contract)
        case .respond(let local):
            guard let response = HandlerResponse(local) else {
                let because =
                    "comes from the Swift handler '\(local.handler ?? "-")', which only an app that registers it "
                    + "can run; audit authz serves body= and file= responses"
                return finish(
                    audited, deny(403, .responseUnavailable(decision, because: because), decision),
                    contract: check.contract)
            }
            // A gateway's HTTP contract reads any 2xx answer as "allow": such a response cannot be given.
            if (200..<300).contains(response.status), check.contract != .envoyGRPC {
                let because =
                    "a gateway's HTTP authorization contract cannot give: it reads the status \(response.status) as "
                    + "'allow' (Envoy's gRPC contract can give it)"
                return finish(
                    audited, deny(403, .responseUnavailable(decision, because: because), decision),
                    contract: check.contract)
            }
            return finish(audited, localAnswer(response, decision), contract: check.contract)
        case .refuse(let refusal):
            let because = "a gateway cannot carry out"
            return finish(
                audited, deny(403, .refusal(refusal.reason, decision, unavailable: because), decision),
                contract: check.contract)
        case .warn:
            return finish(audited, deny(403, .warning(decision), decision), contract: check.contract)
        }
    }

    /// The answer that lets the request through, with the verdict for the upstream.
    private func allow(_ decision: AuditPipeline.Decision, acknowledged: Bool) -> AuthzAnswer {
        var headers: [RequestSnapshot.Header] = [
            .init(name: Self.verdictHeader, value: decision.verdict.action.rawValue),
            .init(name: Self.idHeader, value: decision.id.uuidString),
        ]
        if let rule = decision.decision.rule { headers.append(.init(name: Denial.ruleHeader, value: rule)) }
        return AuthzAnswer(
            isAllowed: true, status: 200, headers: headers,
            headersToRemove: acknowledged ? [Denial.acknowledgeHeader.lowercased()] : [])
    }

    /// A denial with `status` and `denial`'s JSON body (none for nil), naming the deciding rule.
    private func deny(_ status: Int, _ denial: Denial?, _ decision: AuditPipeline.Decision? = nil) -> AuthzAnswer {
        var headers: [RequestSnapshot.Header] = [
            .init(name: "Content-Type", value: "application/json"), .init(name: "Cache-Control", value: "no-store"),
        ]
        if let decision {
            headers.append(.init(name: Self.verdictHeader, value: decision.verdict.action.rawValue))
            headers.append(.init(name: Self.idHeader, value: decision.id.uuidString))
            if let rule = decision.decision.rule { headers.append(.init(name: Denial.ruleHeader, value: rule)) }
        }
        let body = denial.map { Array($0.json.utf8) } ?? []
        return AuthzAnswer(
            isAllowed: false, status: status, headers: headers, body: body,
            reason: denial.map { $0.hint ?? $0.message ?? $0.error })
    }

    /// A rule's local response (its body or file), given to the client by the gateway.
    private func localAnswer(_ response: HandlerResponse, _ decision: AuditPipeline.Decision) -> AuthzAnswer {
        var headers = response.headers.sorted { $0.key < $1.key }.map {
            RequestSnapshot.Header(name: $0.key, value: $0.value)
        }
        headers.append(.init(name: Self.verdictHeader, value: decision.verdict.action.rawValue))
        headers.append(.init(name: Self.idHeader, value: decision.id.uuidString))
        if let rule = decision.decision.rule { headers.append(.init(name: Denial.ruleHeader, value: rule)) }
        let body: [UInt8] = if case .data(let data) = response.body { Array(data) } else { [] }
        return AuthzAnswer(isAllowed: false, status: response.status, headers: headers, body: body)
    }

    /// Finishes `audited` with what the gateway is told, and gives `answer` in the form `contract`
    /// can pass on.
    private func finish(_ audited: AuditedRequest, _ answer: AuthzAnswer, contract: AuthzCheck.Contract) -> AuthzAnswer
    {
        let failure = answer.reason.map { Outcome.Failure(domain: "AuditAuthz", code: answer.status, description: $0) }
        audited.finish(
            Outcome(
                .authz, status: answer.status, bytes: answer.body.count,
                destination: answer.isAllowed ? .asDecided : .none, failure: failure))
        return contract == .nginx ? Self.passableByNginx(answer) : answer
    }

    /// `answer` as nginx `auth_request` can pass it on: it takes 2xx as allow, passes 401 and 403 to
    /// the client without the body, and turns anything else into 500; so a denial is sent as 403
    /// (401 stays) with its status in ``statusHeader`` and its body, when it fits on a header line
    /// (one line of printable text, at most 4 KiB), in ``denialHeader``: the `error_page` recipe in
    /// docs/authz.md gives both back.
    static func passableByNginx(_ answer: AuthzAnswer) -> AuthzAnswer {
        guard !answer.isAllowed else { return answer }
        var passable = answer
        passable.headers.append(.init(name: statusHeader, value: String(answer.status)))
        if !answer.body.isEmpty, answer.body.count <= 4_096, answer.body.allSatisfy({ $0 >= 0x20 && $0 != 0x7F }) {
            passable.headers.append(.init(name: denialHeader, value: String(decoding: answer.body, as: UTF8.self)))
        }
        if answer.status != 401 { passable.status = 403 }
        return passable
    }
}
