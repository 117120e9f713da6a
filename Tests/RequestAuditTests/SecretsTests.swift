import AuditPolicy
import AuditReport
import Foundation
import RequestAudit
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension InterceptionTests {
    @Suite struct Secrets {
        /// Every secret the test sends; none may appear in any event, log line or report.
        static let secrets = [
            "T0KEN-query", "T0KEN-access", "pa55-query", "T0KEN-apikey", "T0KEN-bearer", "T0KEN-cookie",
            "T0KEN-proxy", "T0KEN-setcookie", "pa55-userinfo", "us3r-userinfo", "T0KEN-blocked", "T0KEN-custom",
        ]

        @Test("secrets in headers, query, user info and Set-Cookie never reach events, the log or a report")
        func noSecretLeaks() async throws {
            let audited = try AuditedSession(rules: "[record]\nall .\n[block]\nno-drop /anything/drop") {
                // The list is configurable: these two names are not in the default list.
                $0.redaction.queryParameters.formUnion(["sid", "x-custom"])
            }
            let events = audited.auditor.events(bufferSize: 100)
            let base = HTTPBin.url(.headers).absoluteString.replacingOccurrences(of: "/headers", with: "")
            let withUserInfo = base.replacingOccurrences(of: "://", with: "://us3r-userinfo:pa55-userinfo@")

            var request = URLRequest(
                url: URL(
                    string: withUserInfo
                        + "/get?token=T0KEN-query&access_token=T0KEN-access&password=pa55-query&api_key=T0KEN-apikey"
                        + "&x-custom=T0KEN-custom&keep=visible")!)
            request.setValue("Bearer T0KEN-bearer", forHTTPHeaderField: "Authorization")
            request.setValue("sid=T0KEN-cookie", forHTTPHeaderField: "Cookie")
            request.setValue("Basic T0KEN-proxy", forHTTPHeaderField: "Proxy-Authorization")
            _ = try await audited.session.data(for: request)
            // The response sets a cookie (Set-Cookie: sid=T0KEN-setcookie) and redirects.
            _ = try await audited.session.data(from: URL(string: base + "/cookies/set?sid=T0KEN-setcookie")!)
            // A refused request: the refusal's error text names the URL.
            await #expect(throws: URLError.self) {
                _ = try await audited.session.data(from: URL(string: base + "/anything/drop?token=T0KEN-blocked")!)
            }

            var seen: [AuditEvent] = []
            for await event in events {
                seen.append(event)
                if seen.count(where: { if case .finished = $0 { true } else { false } }) == 3 { break }
            }
            let records = try await audited.finish()
            #expect(records.count == 3)

            let reports = FileManager.default.temporaryDirectory.appendingPathComponent("ra-\(UUID().uuidString)").path
            let summary = try ReportWriter().summarize([audited.logPath])
            let paths = try ReportWriter().write(summary, formats: ReportWriter.Format.allCases, to: reports)

            var texts: [(String, String)] = [("log", try String(contentsOfFile: audited.logPath, encoding: .utf8))]
            let encoder = JSONEncoder()
            for event in seen { texts.append(("event", String(decoding: try encoder.encode(event), as: UTF8.self))) }
            for path in paths { texts.append((path, try String(contentsOfFile: path, encoding: .utf8))) }
            for (place, text) in texts {
                for secret in Self.secrets { #expect(!text.contains(secret), "\(secret) leaked into \(place)") }
            }
            // Redaction keeps what is not secret, so the records stay useful.
            let first = try #require(records.first)
            #expect(first.request.url.contains("keep=visible"))
            // The canonical URL has no user info; the URL as received keeps it, redacted.
            #expect(!first.request.url.contains("@"))
            #expect(first.request.receivedURL?.contains("://REDACTED-") == true)
            #expect(first.request.receivedURL?.contains("@127.0.0.1") == true)
            #expect(
                first.request.url.contains(
                    /token=REDACTED-[0-9a-f]{8}&access_token=REDACTED-[0-9a-f]{8}&password=REDACTED-[0-9a-f]{8}/))
            #expect(
                first.request.headers.first { $0.name == "Authorization" }?.value.wholeMatch(
                    of: /Bearer \[REDACTED-[0-9a-f]{8}\]/) != nil)
            #expect(records[2].outcome.kind == .blocked || records[2].outcome.error != nil)
            #expect(texts.count == 1 + seen.count + 3)
        }
    }
}
