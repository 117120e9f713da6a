import AuditPolicy
import Foundation
import Testing

@Suite struct AuditRequestValueTests {
    static let headers = [AuditRequest.Header(name: "Accept", value: "*/*")]

    @Test("two requests made apart with the same fields are equal and hash alike")
    func equalByFields() {
        let first = AuditRequest(method: "post", url: "https://a.test/x", headers: Self.headers)
        let second = AuditRequest(method: "POST", url: "https://a.test/x", headers: Self.headers)
        #expect(first == second)
        #expect(first.hashValue == second.hashValue)
        #expect(Set([first, second]).count == 1)
    }

    @Test(
        "requests that differ in one field are not equal",
        arguments: [
            AuditRequest(method: "PUT", url: "https://a.test/x", headers: AuditRequestValueTests.headers),
            AuditRequest(method: "POST", url: "https://a.test/y", headers: AuditRequestValueTests.headers),
            AuditRequest(method: "POST", url: "https://a.test/x", headers: []),
        ])
    func differByOneField(other: AuditRequest) {
        #expect(AuditRequest(method: "POST", url: "https://a.test/x", headers: Self.headers) != other)
    }

    @Test("a copy reads the same fields as the request it was copied from")
    func copyReadsTheSame() {
        let request = AuditRequest(method: "delete", url: "https://a.test/x?y=1", headers: Self.headers)
        let copies = Array(repeating: request, count: 3)
        for copy in copies {
            #expect(copy.method == "DELETE")
            #expect(copy.url == "https://a.test/x?y=1")
            #expect(copy.headers == Self.headers)
        }
    }

    @Test("a request encodes to JSON with method, url and headers, and decodes back equal")
    func jsonShape() throws {
        let request = AuditRequest(method: "get", url: "https://a.test/", headers: Self.headers)
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = String(decoding: try encoder.encode(request), as: UTF8.self)
        #expect(
            json == #"{"headers":[{"name":"Accept","value":"*\/*"}],"method":"GET","url":"https:\/\/a.test\/"}"#)
        #expect(try JSONDecoder().decode(AuditRequest.self, from: Data(json.utf8)) == request)
    }

    @Test("a decoded method is kept as written")
    func decodedMethodAsWritten() throws {
        let json = #"{"method":"get","url":"https://a.test/","headers":[]}"#
        let request = try JSONDecoder().decode(AuditRequest.self, from: Data(json.utf8))
        #expect(request.method == "get")
        #expect(request.url == "https://a.test/")
        #expect(request.headers.isEmpty)
    }

    @Test("a JSON request without its headers is an error naming the field")
    func missingField() {
        let json = #"{"method":"GET","url":"https://a.test/"}"#
        #expect {
            try JSONDecoder().decode(AuditRequest.self, from: Data(json.utf8))
        } throws: { error in
            guard case DecodingError.keyNotFound(let key, _) = error else { return false }
            return key.stringValue == "headers"
        }
    }

    @Test("a request prints its fields")
    func printsFields() {
        let request = AuditRequest(method: "get", url: "https://a.test/", headers: Self.headers)
        #expect(
            String(describing: request)
                == #"AuditRequest(method: "GET", url: "https://a.test/", headers: [AuditPolicy.AuditRequest.Header(name: "Accept", value: "*/*")])"#
        )
    }
}
