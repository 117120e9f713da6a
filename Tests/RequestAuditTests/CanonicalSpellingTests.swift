import AuditReport
import Foundation
import RequestAudit
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension InterceptionTests {
    /// Spellings of blocked requests an app sends through an audited `URLSession` to a real httpbin:
    /// the rules decide the canonical request, so none reaches the server.
    @Suite struct CanonicalSpellings {
        static let rules = """
            [block] field=path message="No admin pages"
            admin ^/anything/admin(/|$)
            [block] field=query message="No debugging"
            debug (^|&)debug=1(&|$)
            [block] message="No raw loopback payloads"
            payload ^http://127\\.0\\.0\\.1(:[0-9]+)?/anything/payload/
            """

        /// Each spelling, `PORT` for httpbin's port and `MARK` for a marker the access log is searched for.
        static let spellings = [
            "http://127.0.0.1:PORT/anything/admin/MARK",
            "http://127.0.0.1:PORT/anything/%61dmin/MARK",
            "http://127.0.0.1:PORT/anything/adm%69n/MARK",
            "http://127.0.0.1:PORT/anything//admin/MARK",
            "http://127.0.0.1:PORT/anything/./admin/MARK",
            "http://127.0.0.1:PORT/anything/x/../admin/MARK",
            "http://127.0.0.1:PORT/anything/%2e/admin/MARK",
            "http://127.0.0.1:PORT/anything/x/%2E%2E/admin/MARK",
            "http://127.0.0.1:PORT/anything/q?debug=%31&m=MARK",
            "http://127.0.0.1:PORT/anything/q?de%62ug=1&m=MARK",
            "http://2130706433:PORT/anything/payload/MARK",
            "http://0x7f.0.0.1:PORT/anything/payload/MARK",
            "http://0177.0.0.1:PORT/anything/payload/MARK",
            "http://127.1:PORT/anything/payload/MARK",
            "http://127.0.0.1.:PORT/anything/payload/MARK",
            "HTTP://127.0.0.1:PORT/anything/payload/MARK",
        ]

        @Test(
            "every spelling of a blocked request is refused in the app and never reaches the server",
            arguments: spellings)
        func spellingRefused(_ spelling: String) async throws {
            let audited = try AuditedSession(rules: Self.rules)
            let port = HTTPBin.base.split(separator: ":").last.map(String.init) ?? "9"
            let marker = "spell-\(UUID().uuidString)"
            let url = HTTPBin.url(
                spelling.replacingOccurrences(of: "PORT", with: port).replacingOccurrences(of: "MARK", with: marker))
            let caught = await #expect(throws: URLError.self) { _ = try await audited.session.data(from: url) }
            let records = try await audited.finish()
            #expect(caught?.code == RequestAuditError.refusalCode, "\(spelling)")
            #expect(records.map(\.outcome.kind) == [.blocked])
            _ = try await HTTPBin.received(pathPrefix: "/never")
            #expect(!HTTPBin.requestLines().contains { $0.contains(marker) }, "\(spelling) reached httpbin")
        }
    }
}
