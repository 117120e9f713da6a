import AuditReport
import Foundation
import Testing

@testable import RequestAudit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension InterceptionTests {
    @Suite struct UploadsAndSessionSettings {
        @Test("an upload whose body the protocol cannot see is carried by the system loader, body intact")
        func invisibleUploadBody() async throws {
            let audited = try AuditedSession()
            var request = URLRequest(url: HTTPBin.url(.post))
            request.httpMethod = "POST"
            request.setValue("text/plain", forHTTPHeaderField: "Content-Type")
            let (data, response) = try await audited.session.upload(for: request, from: Data("the upload body".utf8))
            let records = try await audited.finish()
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            let echoed = try JSONSerialization.jsonObject(with: data) as? [String: Any]
            #expect(echoed?["data"] as? String == "the upload body")
            #expect(records.map(\.outcome.kind) == [.systemLoader])
            #expect(records.first?.decision.recorded == ["test/all"])
        }

        @Test("a blocked upload is refused before anything is sent, body or not")
        func blockedUpload() async throws {
            let audited = try AuditedSession(rules: "[block] message=\"No uploads\"\nno-upload /anything/upload-")
            let path = "/anything/upload-\(UUID().uuidString)"
            var request = URLRequest(url: HTTPBin.url(HTTPBin.base + path))
            request.httpMethod = "PUT"
            var caught: URLError?
            do { _ = try await audited.session.upload(for: request, from: Data(repeating: 7, count: 4_096)) } catch let
                error as URLError
            {
                caught = error
            }
            let records = try await audited.finish()
            #expect(
                caught?.requestAuditError
                    == .blocked(rule: "test/no-upload", message: "No uploads", url: HTTPBin.base + path))
            #expect(try await HTTPBin.received(pathPrefix: path) == false)
            #expect(records.map(\.outcome.kind).last == .blocked)
        }

        @Test("a request body set on the request is forwarded and its size recorded")
        func visibleBody() async throws {
            let audited = try AuditedSession()
            var request = URLRequest(url: HTTPBin.url(.post))
            request.httpMethod = "POST"
            request.setValue("text/plain", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(repeating: UInt8(ascii: "a"), count: 5_000)
            let (data, _) = try await audited.session.data(for: request)
            let records = try await audited.finish()
            let echoed = try JSONSerialization.jsonObject(with: data) as? [String: Any]
            #expect((echoed?["data"] as? String)?.count == 5_000)
            #expect(records.first?.request.bodyBytes == 5_000)
            #expect(records.first?.outcome.kind == .response)
        }

        @Test("the caller session's additional headers reach the server, as without RequestAudit")
        func additionalHeaders() async throws {
            let audited = try AuditedSession()
            let configuration = URLSessionConfiguration.ephemeral
            configuration.httpAdditionalHeaders = ["X-Session-Header": "from-config", "User-Agent": "AgentSmith/1.0"]
            let direct = URLSession(configuration: configuration)
            try audited.auditor.install(into: configuration)
            let intercepted = URLSession(configuration: configuration)
            let request = URLRequest(url: HTTPBin.url(.headers))
            let directResult = await CallerStyle.async.run(request, on: direct)
            let interceptedResult = await CallerStyle.async.run(request, on: intercepted)
            _ = try await audited.finish()
            #expect(interceptedResult == directResult)
            #expect(String(decoding: interceptedResult.body ?? Data(), as: UTF8.self).contains("AgentSmith/1.0"))
        }

        @Test("two sessions' additional headers stay their own over interleaved requests")
        func headersOfTwoSessions() async throws {
            let audited = try AuditedSession()
            var sessions: [(name: String, session: URLSession)] = []
            for name in ["first", "second"] {
                let configuration = URLSessionConfiguration.ephemeral
                configuration.httpAdditionalHeaders = ["X-Session-Name": name]
                try audited.auditor.install(into: configuration)
                sessions.append((name, URLSession(configuration: configuration)))
            }
            var seen: [String] = []
            for round in 0..<3 {
                for (name, session) in sessions {
                    let request = URLRequest(url: HTTPBin.url(HTTPBin.base + "/headers?round=\(round)&session=\(name)"))
                    let body = await CallerStyle.async.run(request, on: session).body ?? Data()
                    let headers = try JSONSerialization.jsonObject(with: body) as? [String: [String: String]]
                    seen.append(headers?["headers"]?["X-Session-Name"] ?? "-")
                }
            }
            let records = try await audited.finish()
            #expect(seen == ["first", "second", "first", "second", "first", "second"])
            #expect(records.count == 6)
        }

        @Test("after a session's first audited request, its work queue keeps the session's details")
        func detailsKeptOnWorkQueue() async throws {
            let audited = try AuditedSession()
            let configuration = URLSessionConfiguration.ephemeral
            configuration.httpAdditionalHeaders = ["X-Kept": "yes"]
            try audited.auditor.install(into: configuration)
            let session = URLSession(configuration: configuration)
            let workQueue = try #require(PlatformInternals.workQueue(of: session))
            #expect(workQueue.sync { CallerSession.detailsOfCurrentQueue() } == nil)
            _ = await CallerStyle.async.run(URLRequest(url: HTTPBin.url(.get(query: "kept=1"))), on: session)
            _ = try await audited.finish()
            let kept = try #require(workQueue.sync { CallerSession.detailsOfCurrentQueue() })
            #expect(kept.forwarder.configuration.httpAdditionalHeaders?["X-Kept"] as? String == "yes")
            #expect(kept.workQueue === workQueue)
        }

        /// An audited session and two sessions whose requests time out after 1 s: one direct, one
        /// audited.
        private static func sessionsTimingOutAfterOneSecond() throws -> (
            audited: AuditedSession, direct: URLSession, intercepted: URLSession
        ) {
            let audited = try AuditedSession()
            let configuration = URLSessionConfiguration.ephemeral
            configuration.timeoutIntervalForRequest = 1
            let direct = URLSession(configuration: configuration)
            try audited.auditor.install(into: configuration)
            return (audited, direct, URLSession(configuration: configuration))
        }

        @Test("the caller session's request timeout applies, with the same error as without RequestAudit")
        func sessionTimeout() async throws {
            let (audited, direct, intercepted) = try Self.sessionsTimingOutAfterOneSecond()
            let request = URLRequest(url: HTTPBin.url(.delay(seconds: 3)))
            let started = ContinuousClock.now
            let interceptedResult = await CallerStyle.completionHandler.run(request, on: intercepted)
            let elapsed = ContinuousClock.now - started
            let directResult = await CallerStyle.completionHandler.run(request, on: direct)
            let records = try await audited.finish()
            #expect(interceptedResult == directResult)
            #expect(interceptedResult.errorCode == URLError.timedOut.rawValue)
            #expect(elapsed < .milliseconds(2_500))
            #expect(records.first?.outcome.kind == .failure)
            #expect(records.first?.outcome.error?.code == URLError.timedOut.rawValue)
        }

        @Test("a timeout set on the request, even the default 60 s, wins over the session's, as without RequestAudit")
        func requestTimeoutWins() async throws {
            let (audited, direct, intercepted) = try Self.sessionsTimingOutAfterOneSecond()
            var request = URLRequest(url: HTTPBin.url(.delay(seconds: 2)))
            request.timeoutInterval = 60
            let directResult = await CallerStyle.completionHandler.run(request, on: direct)
            let interceptedResult = await CallerStyle.completionHandler.run(request, on: intercepted)
            let records = try await audited.finish()
            #expect(directResult.status == 200)
            #expect(interceptedResult == directResult)
            #expect(records.first?.outcome.status == 200)
        }

        @Test(
            "cancelling mid-transfer cancels the forwarded task, like a direct cancel", arguments: CallerStyle.allCases)
        func cancellation(_ style: CallerStyle) async throws {
            let audited = try AuditedSession()
            let request = URLRequest(url: HTTPBin.url(.drip(seconds: 4, bytes: 4)))
            let direct = await style.run(request, on: audited.direct, cancelAfter: .milliseconds(400))
            let started = ContinuousClock.now
            let intercepted = await style.run(request, on: audited.session, cancelAfter: .milliseconds(400))
            let elapsed = ContinuousClock.now - started
            let records = try await audited.finish()
            #expect(intercepted.errorCode == direct.errorCode)
            #expect(intercepted.errorCode == URLError.cancelled.rawValue)
            #expect(elapsed < .seconds(3))
            #expect(records.map(\.outcome.kind) == [.cancelled])
        }

        @Test("cookies set on a redirect hop and the final response land in the caller's cookie storage, as directly")
        func cookiesAcrossRedirects() async throws {
            let audited = try AuditedSession()
            func session(intercepted: Bool) throws -> URLSession {
                let configuration = URLSessionConfiguration.ephemeral
                configuration.httpCookieStorage = HTTPCookieStorage.sharedCookieStorage(
                    forGroupContainerIdentifier: "requestaudit-tests-\(UUID().uuidString)")
                configuration.httpCookieAcceptPolicy = .always
                if intercepted { try audited.auditor.install(into: configuration) }
                return URLSession(configuration: configuration)
            }
            let direct = try session(intercepted: false)
            let intercepted = try session(intercepted: true)
            let request = URLRequest(url: HTTPBin.url(HTTPBin.base + "/cookies/set?flavour=oat&size=large"))
            let directResult = await CallerStyle.async.run(request, on: direct)
            let interceptedResult = await CallerStyle.async.run(request, on: intercepted)
            let directAgain = await CallerStyle.async.run(
                URLRequest(url: HTTPBin.url(HTTPBin.base + "/cookies")), on: direct)
            let interceptedAgain = await CallerStyle.async.run(
                URLRequest(url: HTTPBin.url(HTTPBin.base + "/cookies")), on: intercepted)
            _ = try await audited.finish()
            #expect(interceptedResult == directResult)
            #expect(interceptedAgain == directAgain)
            #expect(String(decoding: interceptedAgain.body ?? Data(), as: UTF8.self).contains("oat"))
            let names = intercepted.configuration.httpCookieStorage?.cookies?.map(\.name).sorted()
            #expect(names == ["flavour", "size"])
        }

        /// A session of `audited`'s auditor that adds `headers` to every request.
        static func session(of audited: AuditedSession, adding headers: [String: String]) throws -> URLSession {
            let configuration = URLSessionConfiguration.ephemeral
            configuration.httpAdditionalHeaders = headers
            try audited.auditor.install(into: configuration)
            return URLSession(configuration: configuration)
        }

        @Test(
            "a Host header naming another server, set on the request or by its session, is refused before anything is sent"
        )
        func contradictoryHost() async throws {
            let audited = try AuditedSession(rules: "[allow]\nall .")
            let session = try Self.session(of: audited, adding: ["host": "blocked.example"])
            var own = URLRequest(url: HTTPBin.url(HTTPBin.base + "/anything/host-own"))
            own.setValue("blocked.example", forHTTPHeaderField: "Host")
            let byRequest = await CallerStyle.completionHandler.run(own, on: audited.session)
            let bySession = await CallerStyle.completionHandler.run(
                URLRequest(url: HTTPBin.url(HTTPBin.base + "/anything/host-session")), on: session)
            let records = try await audited.finish()
            #expect(byRequest.errorCode == RequestAuditError.refusalCode.rawValue)
            #expect(bySession.errorCode == RequestAuditError.refusalCode.rawValue)
            #expect(try await HTTPBin.received(pathPrefix: "/anything/host-") == false)
            #expect(records.map(\.outcome.kind) == [.blocked, .blocked])
            #expect(records.map { $0.decision.errors.first?.contains("'blocked.example'") } == [true, true])
        }

        @Test("a redirect hop is decided with the session's headers: its Host, sent to another host, is refused")
        func sessionHostOnRedirectHop() async throws {
            let audited = try AuditedSession(rules: "[allow]\nall .")
            let base = HTTPBin.base
            let named = try #require(HTTPBin.url(base).host) + ":\(try #require(HTTPBin.url(base).port))"
            let session = try Self.session(of: audited, adding: ["Host": named])
            let other = base.replacingOccurrences(of: "127.0.0.1", with: "localhost")
            let request = URLRequest(url: HTTPBin.url(base + "/redirect-to?url=\(other)/anything/hop-host"))
            let result = await CallerStyle.completionHandler.run(request, on: session)
            let records = try await audited.finish()
            #expect(result.errorCode == RequestAuditError.refusalCode.rawValue)
            #expect(try await HTTPBin.received(pathPrefix: "/anything/hop-host") == false)
            #expect(records.map(\.outcome.kind) == [.blocked])
        }

        @Test("a rule on a header sees the headers the session adds to every request")
        func sessionHeadersDecided() async throws {
            let audited = try AuditedSession(rules: "[block] field=header:X-Agent\nagent ^crawler$")
            let session = try Self.session(of: audited, adding: ["X-Agent": "crawler"])
            let request = URLRequest(url: HTTPBin.url(HTTPBin.base + "/anything/session-header"))
            let blocked = await CallerStyle.async.run(request, on: session)
            var overridden = request
            overridden.setValue("person", forHTTPHeaderField: "x-agent")
            let sent = await CallerStyle.async.run(overridden, on: session)
            let records = try await audited.finish()
            #expect(blocked.errorCode == RequestAuditError.refusalCode.rawValue)
            #expect(sent.status == 200)
            #expect(records.map(\.decision.rule) == ["test/agent", nil])
        }

        /// Where a redirect goes: `/cookies/set` sets a cookie and redirects to `/cookies` on its host;
        /// the other goes to `localhost`, for which the storage has no cookie.
        enum CookieHop: String, CaseIterable, Sendable {
            case setByTheRedirect
            case toAnotherHost

            func request() -> URLRequest {
                let base = HTTPBin.base
                let other = base.replacingOccurrences(of: "127.0.0.1", with: "localhost")
                return switch self {
                case .setByTheRedirect: URLRequest(url: HTTPBin.url(base + "/cookies/set?flavour=oat"))
                case .toAnotherHost: URLRequest(url: HTTPBin.url(base + "/redirect-to?url=\(other)/cookies"))
                }
            }
        }

        @Test(
            "a redirect hop carries the Cookie header Foundation would send: a delegate's choice as it is, else the storage's",
            arguments: CallerStyle.allCases, CookieHop.allCases)
        func cookieOnRedirectHop(_ style: CallerStyle, _ hop: CookieHop) async throws {
            let audited = try AuditedSession()
            func session(intercepted: Bool) throws -> URLSession {
                let configuration = URLSessionConfiguration.ephemeral
                let storage = HTTPCookieStorage.sharedCookieStorage(
                    forGroupContainerIdentifier: "requestaudit-tests-\(UUID().uuidString)")
                let stored = HTTPCookie(properties: [.name: "kept", .value: "1", .domain: "127.0.0.1", .path: "/"])
                storage.setCookie(try #require(stored))
                configuration.httpCookieStorage = storage
                if intercepted { try audited.auditor.install(into: configuration) }
                return URLSession(configuration: configuration)
            }
            let direct = await style.run(hop.request(), on: try session(intercepted: false))
            let intercepted = await style.run(hop.request(), on: try session(intercepted: true))
            let records = try await audited.finish()
            #expect(direct.status == 200)
            #expect(intercepted == direct)
            #expect(records.map(\.outcome.redirects.count) == [1])
        }
    }
}
