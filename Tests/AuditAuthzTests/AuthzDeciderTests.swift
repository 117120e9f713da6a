import AuditAuthz
import AuditPipeline
import AuditPolicy
import AuditReport
import Foundation
import Testing

/// Checks decided by the one pipeline: every contract's answer agrees with the policy's verdict
/// on the canonical URL, and each check is one record.
@Suite struct AuthzDeciderTests {
    static let rules = """
        [block] message="no admin"
        admin ^https?://shop\\.test/admin

        [allow]
        public ^https?://shop\\.test/admin/public

        [warn]
        export ^https?://shop\\.test/export

        [redirect https://shop.test/new/$1]
        old ^https?://shop\\.test/old/(.*)

        [respond 418] body="short and stout"
        teapot ^https?://shop\\.test/teapot

        [respond 204]
        empty ^https?://shop\\.test/empty
        """

    private func decider(limit: Int = 64) throws -> (AuthzDecider, AuditPipeline) {
        let pipeline = try AuditPipeline(policy: Policy(parsing: Self.rules, file: "shop.rules"))
        return (AuthzDecider(pipeline: pipeline, maximumConcurrentChecks: limit), pipeline)
    }

    private func check(_ contract: AuthzCheck.Contract, _ target: String, host: String = "shop.test")
        -> AuthzCheck
    {
        AuthzCheck(
            contract: contract, method: "GET", scheme: "https", authority: host, target: target,
            headers: [.init(name: "Host", value: host)])
    }

    @Test(
        "every contract allows exactly what the policy lets through, for spellings of blocked and allowed resources",
        arguments: AuthzCheck.Contract.allCases)
    func differential(contract: AuthzCheck.Contract) throws {
        let (decider, pipeline) = try decider()
        let targets = [
            "/admin", "/%61dmin", "/ADMIN", "/x/../admin", "/./admin", "/admin/public", "/admin/%70ublic",
            "/admin/public/../x", "/shop", "/%2e%2e/admin", "//admin", "/admin?x=1", "/old/a", "/teapot", "/export",
        ]
        for host in ["shop.test", "SHOP.TEST", "shop.test.", "shop.test:443"] {
            for target in targets {
                let check = check(contract, target, host: host)
                let verdict = pipeline.policy.evaluate(check.request)
                let answer = decider.decide(check)
                let lets = verdict.action == .pass || verdict.action == .allow
                #expect(answer.isAllowed == lets, "\(contract) \(host)\(target): \(verdict.action)")
                #expect(answer.header("X-Request-Audit-Verdict") == verdict.action.rawValue, "\(host)\(target)")
            }
        }
    }

    @Test("a block answers 403 with the JSON body audit proxy sends, naming the rule")
    func block() throws {
        let (decider, _) = try decider()
        let answer = decider.decide(check(.envoyHTTP, "/admin"))
        #expect(answer.status == 403)
        #expect(answer.header("X-Request-Audit-Rule") == "shop/admin")
        let body = try #require(try JSONSerialization.jsonObject(with: Data(answer.body)) as? [String: Any])
        #expect(body["error"] as? String == "blocked")
        #expect(body["message"] as? String == "no admin")
        #expect(body["requestID"] as? String == answer.header("X-Request-Audit-ID"))
    }

    @Test("nginx gets every denial as 403 (it passes nothing else on), with the status and body in headers")
    func nginxDenials() throws {
        let (decider, _) = try decider()
        let redirect = decider.decide(check(.nginx, "/old/a"))
        #expect(redirect.status == 403)
        #expect(redirect.header("X-Request-Audit-Status") == "302")
        #expect(redirect.header("Location") == "https://shop.test/new/a")
        let teapot = decider.decide(check(.nginx, "/teapot"))
        #expect(teapot.status == 403)
        #expect(teapot.header("X-Request-Audit-Status") == "418")
        #expect(teapot.header("X-Request-Audit-Denial") == "short and stout")
    }

    @Test("a 2xx local response cannot be given over an HTTP contract (2xx means allow): refused, fail closed")
    func successfulLocalResponse() throws {
        let (decider, _) = try decider()
        let http = decider.decide(check(.forwardAuth, "/empty"))
        #expect(!http.isAllowed)
        #expect(http.status == 403)
        #expect(String(decoding: http.body, as: UTF8.self).contains(#""error":"respond-unavailable""#))
        let grpc = decider.decide(check(.envoyGRPC, "/empty"))
        #expect(!grpc.isAllowed)
        #expect(grpc.status == 204)
    }

    @Test("a warning is refused until the check carries Audit-Acknowledge, which the upstream never sees")
    func warning() throws {
        let (decider, _) = try decider()
        #expect(decider.decide(check(.envoyGRPC, "/export")).status == 403)
        var acknowledged = check(.envoyGRPC, "/export")
        acknowledged.headers.append(.init(name: "audit-acknowledge", value: "shop/export"))
        let answer = decider.decide(acknowledged)
        #expect(answer.isAllowed)
        #expect(answer.headersToRemove == ["audit-acknowledge"])
    }

    @Test("each check is one record of kind authz, with the contract, the gateway's request id and the status")
    func records() async throws {
        let (decider, pipeline) = try decider()
        let events = pipeline.events()
        var check = check(.nginx, "/admin")
        check.requestID = "abc-1"
        _ = decider.decide(check)
        _ = decider.decide(self.check(.envoyGRPC, "/shop"))
        var finished: [AuditRecord] = []
        for await event in events {
            if case .finished(let record) = event { finished.append(record) }
            if finished.count == 2 { break }
        }
        #expect(finished.map(\.outcome.kind) == [.authz, .authz])
        #expect(finished.map(\.outcome.status) == [403, 200])
        #expect(finished.map(\.request.gateway) == ["nginx", "envoy-grpc"])
        #expect(finished.map(\.request.gatewayRequestID) == ["abc-1", nil])
        #expect(finished.map(\.request.url) == ["https://shop.test/admin", "https://shop.test/shop"])
    }

    @Test("a malformed check is refused 400 with what is wrong, and recorded")
    func malformed() async throws {
        let (decider, pipeline) = try decider()
        let events = pipeline.events()
        let answer = decider.decide(
            AuthzCheck(contract: .forwardAuth, method: "GET", scheme: "https", authority: "", target: "/x", headers: [])
        )
        #expect(answer.status == 400)
        #expect(
            String(decoding: answer.body, as: UTF8.self).contains(
                "malformed forward-auth check: the check names no host"))
        for await event in events {
            guard case .finished(let record) = event else { continue }
            #expect(record.outcome.status == 400)
            // Recorded as the target it named, without a host: not `https:///x`, which URL parsing
            // would read as the host `x`.
            #expect(record.request.url == "/x")
            #expect(record.request.host == "")
            break
        }
    }

    @Test("beyond the bound on checks in flight, a check is shed with 503 at once and not decided")
    func shedding() throws {
        let (decider, pipeline) = try decider(limit: 2)
        #expect(decider.gate.enter())
        #expect(decider.gate.enter())
        let shed = decider.decide(check(.envoyHTTP, "/admin"))
        #expect(shed.status == 503)
        #expect(shed.header("Retry-After") == "1")
        #expect(pipeline.statistics.requests == 0)
        #expect(decider.gate.shed == 1)
        decider.gate.leave()
        #expect(decider.decide(check(.envoyHTTP, "/admin")).status == 403)
        decider.gate.leave()
        #expect(decider.gate.count == 0)
    }
}
