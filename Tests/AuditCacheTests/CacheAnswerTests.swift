import AuditCache
import AuditReport
import Testing

/// How a stored response answers a request's conditions and byte ranges (RFC 9110 §13.2.2, §14).
@Suite struct CacheAnswerTests {
    static let validators = [
        ("Cache-Control", "max-age=60"), ("ETag", "\"v1\""), ("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT"),
    ]

    /// What a stored ten-byte body `0123456789` answers a request with `headers`: its status, its
    /// body's text, and its `Content-Range`.
    static func answer(_ headers: [(String, String)], method: String = "GET") throws -> (Int, String, String?) {
        let fixture = try CacheFixture()
        #expect(fixture.fetch(fixture.request(), headers: validators, body: "0123456789"))
        let request = fixture.request(method: method, headers: headers)
        let stored = try #require(fixture.served(fixture.request()))
        let answer = stored.answer(to: request)
        let body = stored.body.readAll()[answer.body]
        if method == "GET", answer.status != 304 {
            #expect(answer.headers.last { $0.name == "Content-Length" }?.value == String(answer.body.count))
        }
        return (
            answer.status, String(decoding: body, as: UTF8.self),
            answer.headers.last { $0.name == "Content-Range" }?.value
        )
    }

    @Test(
        "one byte range is answered 206 with that part and its Content-Range",
        arguments: [
            ("bytes=0-3", "0123", "bytes 0-3/10"),
            ("bytes=7-", "789", "bytes 7-9/10"),
            ("bytes=-2", "89", "bytes 8-9/10"),
            ("bytes=4-4", "4", "bytes 4-4/10"),
            ("bytes=5-99", "56789", "bytes 5-9/10"),
            ("bytes=-99", "0123456789", "bytes 0-9/10"),
            ("BYTES=1-2", "12", "bytes 1-2/10"),
            ("bytes= 1 - 2 ", "12", "bytes 1-2/10"),
            ("bytes=3-99999999999999999999", "3456789", "bytes 3-9/10"),
        ])
    func part(_ range: String, body: String, contentRange: String) throws {
        let (status, text, served) = try Self.answer([("Range", range)])
        #expect(status == 206)
        #expect(text == body)
        #expect(served == contentRange)
    }

    @Test(
        "a range that starts at or past the end, or an empty suffix, is answered 416 with the length",
        arguments: ["bytes=10-", "bytes=99-100", "bytes=-0", "bytes=99999999999999999999-"])
    func unsatisfiable(_ range: String) throws {
        let (status, text, served) = try Self.answer([("Range", range)])
        #expect(status == 416)
        #expect(text == "")
        #expect(served == "bytes */10")
    }

    @Test(
        "several ranges, another unit or a malformed range get the whole response, as RFC 9110 allows",
        arguments: ["bytes=0-1,4-5", "items=0-1", "bytes=abc", "bytes=2-1", "bytes=-", "bytes=", "bytes=0-1,"])
    func whole(_ range: String) throws {
        let (status, text, served) = try Self.answer([("Range", range)])
        #expect(status == 200)
        #expect(text == "0123456789")
        #expect(served == nil)
    }

    @Test(
        "If-Range that names the stored response (strong ETag, or its Last-Modified exactly) lets the range apply",
        arguments: [
            ("\"v1\"", 206), ("Sun, 06 Nov 1994 08:49:37 GMT", 206), ("\"v2\"", 200), ("W/\"v1\"", 200),
            ("Sun, 06 Nov 1994 08:49:38 GMT", 200), ("not a date", 200),
        ])
    func ifRange(_ value: String, status: Int) throws {
        let (served, text, _) = try Self.answer([("Range", "bytes=0-3"), ("If-Range", value)])
        #expect(served == status)
        #expect(text == (status == 206 ? "0123" : "0123456789"))
    }

    @Test("a satisfied condition is answered 304 before any range; HEAD gets the head of the whole response")
    func conditionAndHead() throws {
        let (notModified, empty, _) = try Self.answer([("Range", "bytes=0-3"), ("If-None-Match", "\"v1\"")])
        #expect(notModified == 304)
        #expect(empty == "")
        let (head, nothing, range) = try Self.answer([("Range", "bytes=0-3")], method: "HEAD")
        #expect(head == 200)
        #expect(nothing == "")
        #expect(range == nil)
    }
}
