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
    public static let busy = unavailable(
        "busy", "audit authz has as many checks in flight as it takes; try again later")

    /// The answer to a check that comes once the listener is stopping.
    public static let stopping = unavailable("stopping", "audit authz is stopping; ask another replica")

    /// A 503 answer, not decided, naming the problem `error`.
    private static func unavailable(_ error: String, _ message: String) -> AuthzAnswer {
        AuthzAnswer(
            isAllowed: false, status: 503,
            headers: [.init(name: "Content-Type", value: "application/json"), .init(name: "Retry-After", value: "1")],
            body: Array(Denial.problem(error, message).json.utf8))
    }

    /// The acknowledgement header's name, lower-cased once.
    private static let acknowledgeField = Denial.acknowledgeHeader.lowercased()

    private func decideAdmitted(_ check: AuthzCheck) -> AuthzAnswer {
        let request = check.request
        let audited = pipeline.admit(
            request, bodyBytes: check.bodyBytes, gateway: (check.contract.rawValue, check.requestID))
        return finish(audited, answer(to: audited, check: check), contract: check.contract)
    }

    /// What the gateway is told about `check`, admitted as `audited`.
    private func answer(to audited: AuditedRequest, check: AuthzCheck) -> AuthzAnswer {
        let decision = audited.decision
        if let problem = check.problem {
            return deny(400, .problem("bad-request", "malformed \(check.contract.rawValue) check: \(problem)"))
        }
        var admission = audited.admission
        if admission == .warn {
            let acknowledgements = check.headers.lazy.filter { $0.name.lowercased() == Self.acknowledgeField }
                .map(\.value)
            admission = audited.resolveWarning(acknowledgements: acknowledgements, fallback: warnings)
        }
        switch admission {
        case .send(nil):
            return AuthzAnswer(
                isAllowed: true, status: 200, headers: Self.decisionHeaders(decision),
                headersToRemove: audited.warning?.decidedBy == .acknowledged ? [Self.acknowledgeField] : [])
        case .send(let target?):
            var answer = deny(302, nil, decision)
            answer.headers.append(.init(name: "Location", value: target))
            return answer
        case .respond(let local):
            guard let response = HandlerResponse(local) else {
                let because = Denial.handlerOnly(decision, frontEnd: "audit authz")
                return deny(403, .responseUnavailable(decision, because: because), decision)
            }
            // A gateway's HTTP contract reads any 2xx answer as "allow": such a response cannot be given.
            guard !(200..<300).contains(response.status) || check.contract == .envoyGRPC else {
                let because =
                    "a gateway's HTTP authorization contract cannot give: it reads the status \(response.status) as "
                    + "'allow' (Envoy's gRPC contract can give it)"
                return deny(403, .responseUnavailable(decision, because: because), decision)
            }
            let headers = response.headers.sorted { $0.key < $1.key }.map {
                RequestSnapshot.Header(name: $0.key, value: $0.value)
            }
            let body: [UInt8] = if case .data(let data) = response.body { Array(data) } else { [] }
            return AuthzAnswer(
                isAllowed: false, status: response.status, headers: headers + Self.decisionHeaders(decision),
                body: body)
        case .refuse(let refusal):
            return deny(403, .refusal(refusal.reason, decision, unavailable: "a gateway cannot carry out"), decision)
        case .warn:
            return deny(403, .warning(decision), decision)
        }
    }

    /// The headers naming `decision` for the upstream or the client: the verdict, the request's id,
    /// and the deciding rule.
    private static func decisionHeaders(_ decision: AuditPipeline.Decision) -> [RequestSnapshot.Header] {
        var headers: [RequestSnapshot.Header] = [
            .init(name: verdictHeader, value: decision.verdict.action.rawValue),
            .init(name: idHeader, value: decision.id.uuidString),
        ]
        if let rule = decision.decision.rule { headers.append(.init(name: Denial.ruleHeader, value: rule)) }
        return headers
    }

    /// A denial with `status` and `denial`'s JSON body (none for nil), naming `decision` when given.
    private func deny(_ status: Int, _ denial: Denial?, _ decision: AuditPipeline.Decision? = nil) -> AuthzAnswer {
        let headers: [RequestSnapshot.Header] = [
            .init(name: "Content-Type", value: "application/json"), .init(name: "Cache-Control", value: "no-store"),
        ]
        return AuthzAnswer(
            isAllowed: false, status: status, headers: headers + (decision.map(Self.decisionHeaders) ?? []),
            body: denial.map { Array($0.json.utf8) } ?? [], reason: denial.map { $0.hint ?? $0.message ?? $0.error })
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
