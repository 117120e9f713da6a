import AuditReport
import Foundation
import Testing

@testable import RequestAudit

#if canImport(FoundationNetworking)
    import FoundationNetworking

    /// Plain-http data tasks without a delegate, decided on the session's work queue and loaded by
    /// Foundation's own protocol: what the server receives and what the caller gets must be what
    /// they are without RequestAudit, beyond the forwarding matrix's rows.
    extension InterceptionTests {
        @Suite struct DelegatelessLoads {
            /// `request` sent directly and audited (each session with its own cookie storage), with the
            /// audited session's records.
            private func both(_ request: URLRequest, rules: String = "[record]\nall .") async throws -> (
                direct: Exchange, intercepted: Exchange, records: [AuditRecord]
            ) {
                let audited = try AuditedSession(rules: rules)
                let direct = await CallerStyle.completionHandler.run(request, on: audited.direct)
                let intercepted = await CallerStyle.completionHandler.run(request, on: audited.session)
                return (direct, intercepted, try await audited.finish())
            }

            private static func request(_ path: String, method: String = "GET", body: String? = nil) -> URLRequest {
                var request = URLRequest(url: HTTPBin.url(HTTPBin.base + path))
                request.httpMethod = method
                request.httpBody = body.map { Data($0.utf8) }
                return request
            }

            @Test(
                "the server gets the same method, headers and body as from FoundationNetworking",
                arguments: [
                    ("GET", nil), ("POST", "a=1&b=%C3%A9"), ("PUT", "{}"), ("DELETE", nil), ("POST", nil),
                    ("OPTIONS", nil),
                ] as [(String, String?)])
            func sameRequest(_ method: String, _ body: String?) async throws {
                let (direct, intercepted, records) = try await both(
                    Self.request("/anything/echo", method: method, body: body))
                #expect(direct.status == 200)
                #expect(intercepted == direct)
                #expect(records.map(\.outcome.kind) == [.response])
            }

            @Test("a repeated response header reaches the caller joined as FoundationNetworking joins it")
            func repeatedResponseHeader() async throws {
                let (direct, intercepted, _) = try await both(
                    Self.request("/response-headers?X-Dup=one&X-Dup=two"))
                #expect(direct.headers["x-dup"] == "one, two")
                #expect(intercepted == direct)
            }

            @Test("a cookie set by a redirect is stored and sent on the next hop")
            func cookieAcrossRedirect() async throws {
                let (direct, intercepted, records) = try await both(Self.request("/cookies/set?flavour=oat"))
                #expect(String(decoding: direct.body ?? Data(), as: UTF8.self).contains("oat"))
                #expect(intercepted == direct)
                #expect(records.first?.outcome.redirects.count == 1)
            }

            @Test(
                "redirects change or keep the method and body as FoundationNetworking does",
                arguments: [301, 302, 303, 307, 308])
            func redirectMethod(_ status: Int) async throws {
                let (direct, intercepted, _) = try await both(
                    Self.request(
                        "/redirect-to?url=%2Fanything%2Fafter&status_code=\(status)", method: "POST", body: "x=1"))
                #expect(direct.status == 200)
                #expect(intercepted == direct)
            }

            @Test("a 300 keeps its body and an unfollowed 301 without a location gives none, as directly")
            func unfollowedRedirects() async throws {
                for path in ["/status/300", "/status/301"] {
                    let (direct, intercepted, _) = try await both(Self.request(path))
                    #expect(intercepted == direct, "\(path)")
                }
            }

            @Test("more than twenty redirects fail with FoundationNetworking's error")
            func tooManyRedirects() async throws {
                let (direct, intercepted, records) = try await both(Self.request("/redirect/21"))
                #expect(direct.errorCode == URLError.httpTooManyRedirects.rawValue)
                #expect(intercepted == direct)
                #expect(records.map(\.outcome.kind) == [.failure])
            }

            @Test("a refused connection fails with FoundationNetworking's code, message and failing URL")
            func refusedConnection() async throws {
                let audited = try AuditedSession()
                let request = URLRequest(url: try #require(URL(string: "http://127.0.0.1:9/closed")))
                let direct = await Self.error(of: request, on: audited.direct)
                let intercepted = await Self.error(of: request, on: audited.session)
                _ = try await audited.finish()
                #expect(direct.code == URLError.cannotConnectToHost.rawValue)
                #expect(intercepted.code == direct.code)
                // libcurl's message names the milliseconds the attempt took: equal but for that number.
                let untimed = { (text: String) in
                    text.replacingOccurrences(of: #"after \d+ ms"#, with: "after N ms", options: .regularExpression)
                }
                #expect(untimed(intercepted.localizedDescription) == untimed(direct.localizedDescription))
                #expect(
                    intercepted.userInfo[NSURLErrorFailingURLErrorKey] as? URL
                        == direct.userInfo[NSURLErrorFailingURLErrorKey] as? URL)
                #expect(
                    (intercepted.userInfo[NSUnderlyingErrorKey] as? NSError)?.code
                        == (direct.userInfo[NSUnderlyingErrorKey] as? NSError)?.code)
            }

            private static func error(of request: URLRequest, on session: URLSession) async -> NSError {
                do {
                    _ = try await session.data(for: request)
                    return NSError(domain: "no error", code: 0)
                } catch {
                    return error as NSError
                }
            }

            @Test("a hop the policy refuses ends the load with the refusal, and is never sent")
            func refusedHop() async throws {
                let marker = UUID().uuidString
                let audited = try AuditedSession(rules: "[block]\nhop /anything/no-\(marker)")
                let intercepted = await CallerStyle.completionHandler.run(
                    Self.request("/redirect-to?url=%2Fanything%2Fno-\(marker)&status_code=302"), on: audited.session)
                let records = try await audited.finish()
                #expect(intercepted.errorCode == RequestAuditError.refusalCode.rawValue)
                #expect(records.map(\.outcome.kind) == [.blocked])
                #expect(!HTTPBin.requestLines().contains { $0.contains("/anything/no-\(marker)") })
            }
        }
    }
#endif
