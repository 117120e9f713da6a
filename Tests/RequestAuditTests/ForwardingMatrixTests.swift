import AuditReport
import Foundation
import RequestAudit
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One row of the matrix: a request to build.
struct MatrixCase: Sendable, CustomTestStringConvertible {
    let name: String
    let method: String
    let endpoint: Endpoint
    var headers: [(String, String)] = []
    var body: String?
    var timeout: TimeInterval?

    var testDescription: String { name }

    func request() -> URLRequest {
        var request = URLRequest(url: HTTPBin.url(endpoint))
        request.httpMethod = method
        for (name, value) in headers { request.addValue(value, forHTTPHeaderField: name) }
        request.httpBody = body.map { Data($0.utf8) }
        if let timeout { request.timeoutInterval = timeout }
        return request
    }

    static let all: [MatrixCase] = [
        MatrixCase(name: "GET with query", method: "GET", endpoint: .get(query: "a=1&b=two&c=%C3%A9")),
        MatrixCase(
            name: "POST form", method: "POST", endpoint: .post,
            headers: [("Content-Type", "application/x-www-form-urlencoded")], body: "name=Ann&city=K%C3%B6ln"
        ),
        MatrixCase(
            name: "POST JSON", method: "POST", endpoint: .post, headers: [("Content-Type", "application/json")],
            body: #"{"id":7,"tags":["a","b"]}"#
        ),
        MatrixCase(
            name: "PUT", method: "PUT", endpoint: .put, headers: [("Content-Type", "text/plain")], body: "put body"),
        MatrixCase(
            name: "PATCH", method: "PATCH", endpoint: .patch, headers: [("Content-Type", "text/plain")], body: "patch"),
        MatrixCase(name: "DELETE", method: "DELETE", endpoint: .delete),
        MatrixCase(name: "HEAD", method: "HEAD", endpoint: .get(query: "head=1")),
        MatrixCase(
            name: "custom and duplicate headers", method: "GET", endpoint: .headers,
            headers: [("X-Custom", "one"), ("X-Dup", "first"), ("X-Dup", "second")]
        ),
        MatrixCase(name: "gzip", method: "GET", endpoint: .gzip),
        MatrixCase(name: "deflate", method: "GET", endpoint: .deflate),
        MatrixCase(name: "chunked stream-bytes", method: "GET", endpoint: .streamBytes(60_000)),
        MatrixCase(name: "bytes 102400", method: "GET", endpoint: .bytes(102_400)),
        MatrixCase(name: "status 201", method: "GET", endpoint: .status(201)),
        MatrixCase(name: "status 204", method: "GET", endpoint: .status(204)),
        MatrixCase(name: "status 304", method: "GET", endpoint: .status(304)),
        MatrixCase(name: "status 404", method: "GET", endpoint: .status(404)),
        MatrixCase(name: "status 418", method: "GET", endpoint: .status(418)),
        MatrixCase(name: "status 500", method: "GET", endpoint: .status(500)),
        MatrixCase(name: "redirect 3", method: "GET", endpoint: .redirect(count: 3)),
        MatrixCase(name: "absolute redirect 2", method: "GET", endpoint: .absoluteRedirect(count: 2)),
        MatrixCase(name: "delay beyond the timeout", method: "GET", endpoint: .delay(seconds: 3), timeout: 1),
    ]
}

@Suite(.serialized) struct InterceptionTests {
    @Suite struct ForwardingMatrix {
        @Test(
            "the caller sees exactly what it sees without RequestAudit", arguments: MatrixCase.all, CallerStyle.allCases
        )
        func sameAsDirect(_ row: MatrixCase, _ style: CallerStyle) async throws {
            let audited = try AuditedSession()
            let direct = await style.run(row.request(), on: audited.direct)
            let intercepted = await style.run(row.request(), on: audited.session)
            let records = try await audited.finish()
            #expect(intercepted == direct, "direct: \(direct)\nintercepted: \(intercepted)")
            #expect(records.count == 1)
            #expect(records.first?.request.method == row.method)
        }
    }
}
