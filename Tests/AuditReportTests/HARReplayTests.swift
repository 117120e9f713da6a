import AuditReport
import Foundation
import Testing

/// Reading a recording for replay: what each entry must have, and what a replayed response carries.
@Suite struct HARReplayTests {
    @Test(
        "entries without what a replay needs are each named by number and field; entries without a response are left out"
    )
    func invalidEntries() throws {
        let path = try writeTemporary(
            """
            {"log": {"entries": [
              {"request": {"method": "GET", "url": "http://a.test/blocked"}, "response": {"status": 0}},
              {"request": {"url": "http://a.test/"}, "response": {"status": 200}},
              {"request": {"method": "GET", "url": "http://a.test/"}, "response": {"status": "200"}},
              5,
              {"request": {"method": "GET", "url": "http://a.test/"}},
              {"request": {"method": "GET", "url": "http://a.test/"},
               "response": {"status": 200, "content": {"text": "%%%", "encoding": "base64"}}},
              {"request": {"method": "GET", "url": "http://a.test/ok"}, "response": {"status": 200}},
              {"request": 5, "response": {"status": 200}},
              {"request": {"method": "", "url": "http://a.test/"}, "response": {"status": 200}},
              {"request": {"method": "GET", "url": ["http://a.test/"]}, "response": {"status": 200}},
              {"request": {"method": "GET", "url": "http://a.test/"}, "response": null},
              {"request": {"method": "GET", "url": "http://a.test/"}, "response": {"status": 1000}}
            ]}}
            """, name: "broken-entries.har")
        #expect(throws: RecordingError.self) { try HARReplay(path: path) }
        do {
            _ = try HARReplay(path: path)
        } catch {
            #expect(
                error.description.split(separator: "\n") == [
                    "\(path): entry 2: error: request.method is missing",
                    "\(path): entry 3: error: response.status is not a status code",
                    "\(path): entry 4: error: not an object",
                    "\(path): entry 5: error: response is missing",
                    "\(path): entry 6: error: response.content.text is not base64, as its encoding says",
                    "\(path): entry 8: error: request is not an object",
                    "\(path): entry 9: error: request.method is not a method",
                    "\(path): entry 10: error: request.url is not a URL",
                    "\(path): entry 11: error: response is missing",
                    "\(path): entry 12: error: response.status is not a status code",
                ])
        }
    }

    @Test(
        "a body of some bytes the file does not hold (a browser's export) is a miss that says so, not an empty body; a redirect's or an empty one replays"
    )
    func bodyNotHeld() throws {
        let path = try writeTemporary(
            """
            {"log": {"entries": [
              {"request": {"method": "GET", "url": "http://a.test/image"},
               "response": {"status": 200, "content": {"size": 5120, "mimeType": "image/png"}}},
              {"request": {"method": "GET", "url": "http://a.test/moved"},
               "response": {"status": 302, "headers": [{"name": "Location", "value": "/image"}],
                            "content": {"size": 169, "mimeType": "text/html"}}},
              {"request": {"method": "GET", "url": "http://a.test/empty"},
               "response": {"status": 204, "content": {"size": 0, "mimeType": ""}}}
            ]}}
            """, name: "chrome.har")
        let replay = try HARReplay(path: path)
        #expect(replay.count == 2)
        #expect(replay.response(method: "GET", url: "http://a.test/image", body: nil) == nil)
        #expect(
            replay.missMessage(method: "GET", url: "http://a.test/image")
                == "no recorded response matches GET http://a.test/image in the recording \(path) (it holds that "
                + "request without its response body, which the file does not hold (5120 bytes))")
        #expect(replay.response(method: "GET", url: "http://a.test/moved", body: nil)?.status == 302)
        #expect(replay.response(method: "GET", url: "http://a.test/empty", body: nil)?.body == [])
    }

    @Test("an entry without a response is left out, and a recorded method in lower case still matches")
    func statusZeroAndMethodCase() throws {
        let path = try writeTemporary(
            """
            {"log": {"entries": [
              {"request": {"method": "GET", "url": "http://a.test/blocked"}, "response": {"status": 0}},
              {"request": {"method": "get", "url": "http://a.test/ok"}, "response": {"status": 200,
               "content": {"text": "fine"}}}
            ]}}
            """, name: "browser.har")
        let replay = try HARReplay(path: path)
        #expect(replay.count == 1)
        #expect(replay.response(method: "GET", url: "http://a.test/blocked", body: nil) == nil)
        #expect(replay.response(method: "GET", url: "http://a.test/ok", body: nil)?.body == Array("fine".utf8))
    }

    @Test(
        "the bodies a recorded response matches: the sizes sent, a HAR's text, any for a body cut short, none without"
    )
    func matchingBodies() throws {
        let path = try writeTemporary(
            """
            {"log": {"entries": [
              {"request": {"method": "POST", "url": "http://a.test/upload", "bodySize": 300000,
               "_bodySHA256": "\(String(repeating: "0", count: 64))", "postData": {"text": "", "_bodyOmitted": true}},
               "response": {"status": 200}},
              {"request": {"method": "POST", "url": "http://a.test/upload", "bodySize": 12,
               "_bodySHA256": "\(String(repeating: "1", count: 64))", "postData": {"text": "twelve bytes"}},
               "response": {"status": 200}},
              {"request": {"method": "POST", "url": "http://a.test/form", "postData": {"text": "caf\\u00e9"}},
               "response": {"status": 200}},
              {"request": {"method": "POST", "url": "http://a.test/form?x=1"}, "response": {"status": 200}},
              {"request": {"method": "PUT", "url": "http://a.test/form", "bodySize": 10, "_bodyIncomplete": true},
               "response": {"status": 200}},
              {"request": {"method": "PATCH", "url": "http://a.test/form",
               "_bodySHA256": "\(String(repeating: "2", count: 64))"}, "response": {"status": 200}}
            ]}}
            """, name: "body-sizes.har")
        let replay = try HARReplay(path: path)
        let upload = replay.matchingBodies(method: "POST", url: "http://a.test/upload")
        #expect(upload == HARReplay.MatchingBodies(sizes: [12, 300_000]))
        #expect(upload?.largest == 300_000)
        #expect(upload.map { [$0.canMatch(size: 12), $0.canMatch(size: 13)] } == [true, false])
        #expect(
            replay.matchingBodies(method: "post", url: "HTTP://A.TEST/form") == .init(sizes: [5], largestRedacted: 5))
        #expect(replay.matchingBodies(method: "POST", url: "http://a.test/form?x=1") == .init(sizes: [0]))
        let anySize = HARReplay.MatchingBodies(isAnySize: true)
        #expect(replay.matchingBodies(method: "PUT", url: "http://a.test/form") == anySize)
        #expect(replay.matchingBodies(method: "PATCH", url: "http://a.test/form") == anySize)
        #expect(anySize.largest == .max && anySize.canMatch(size: 7))
        #expect(replay.matchingBodies(method: "GET", url: "http://a.test/form") == nil)
    }

    @Test("a decoded body goes to a proxy's client without its Content-Encoding; a body kept coded keeps it")
    func codingHeaders() throws {
        let path = try writeTemporary(
            """
            {"log": {"entries": [
              {"request": {"method": "GET", "url": "http://a.test/decoded"}, "response": {"status": 200,
               "headers": [{"name": "Content-Encoding", "value": "gzip"}, {"name": "Content-Type", "value": "text/plain"},
                           {"name": "Content-Length", "value": "31"}],
               "content": {"text": "as the application read it"}}},
              {"request": {"method": "GET", "url": "http://a.test/coded"}, "response": {"status": 200,
               "headers": [{"name": "Content-Encoding", "value": "zstd"}],
               "content": {"text": "KLUv/QRYEQAAb2sK", "encoding": "base64", "_contentCoding": "zstd"}}}
            ]}}
            """, name: "codings.har")
        let replay = try HARReplay(path: path)
        let decoded = try #require(replay.response(method: "GET", url: "http://a.test/decoded", body: nil))
        #expect(decoded.contentCoding == nil)
        #expect(decoded.headersForKeptBody.map(\.name) == ["Content-Type"])
        #expect(decoded.endToEndHeaders.map(\.name) == ["Content-Encoding", "Content-Type"])
        let coded = try #require(replay.response(method: "GET", url: "http://a.test/coded", body: nil))
        #expect(coded.contentCoding == "zstd")
        #expect(coded.headersForKeptBody.map(\.name) == ["Content-Encoding"])
    }
}
