import AuditReport
import Foundation
import Testing

/// What a HAR recording keeps of a body: all of it up to the bound, its size alone past
/// it; text as text, anything else as base64.
@Suite struct HARRecordingTests {
    static func exchange(url: String = "http://a.test/file") -> RecordedExchange {
        RecordedExchange(
            started: Date(timeIntervalSince1970: 1_800_000_000), method: "GET", url: url, requestHeaders: [],
            requestBody: nil, status: 200, statusText: "OK",
            responseHeaders: [.init(name: "Content-Type", value: "application/octet-stream")], chunks: [],
            waitMilliseconds: 0)
    }

    static func entries(_ path: String) throws -> [[String: Any]] {
        let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path)))
        let log = (object as? [String: Any])?["log"] as? [String: Any]
        return log?["entries"] as? [[String: Any]] ?? []
    }

    @Test("pieces are kept up to the bound; past it every piece is dropped and only the size counted")
    func bound() {
        var exchange = Self.exchange()
        exchange.appendBody([1, 2, 3], at: 0, keepingAtMost: 5)
        exchange.appendBody([4, 5], at: 10, keepingAtMost: 5)
        #expect(exchange.chunks.map(\.bytes) == [[1, 2, 3], [4, 5]])
        #expect(exchange.omittedBodyBytes == nil)
        exchange.appendBody([6], at: 20, keepingAtMost: 5)
        exchange.appendBody([7, 8], at: 30, keepingAtMost: 5)
        #expect(exchange.chunks.isEmpty)
        #expect(exchange.omittedBodyBytes == 8)
    }

    @Test("a body larger than the recording keeps is written by its size alone, and a replay names it on a miss")
    func omitted() throws {
        let path = NSTemporaryDirectory() + "omitted-\(UUID().uuidString).har"
        let recorder = try HARRecorder(path: path, maximumBodyBytes: 4)
        var big = Self.exchange(url: "http://a.test/big")
        for _ in 0..<3 { big.appendBody([0x61, 0x62], at: 0, keepingAtMost: recorder.maximumBodyBytes) }
        var small = Self.exchange(url: "http://a.test/small")
        small.appendBody(Array("ok".utf8), at: 0, keepingAtMost: recorder.maximumBodyBytes)
        recorder.add(big)
        recorder.add(small)
        let entries = try Self.entries(path)
        let response = try #require(entries.first?["response"] as? [String: Any])
        let content = try #require(response["content"] as? [String: Any])
        #expect(response["bodySize"] as? Int == 6)
        #expect(content["size"] as? Int == 6)
        #expect(content["text"] as? String == "")
        #expect(content["_bodyOmitted"] as? Bool == true)
        let replay = try HARReplay(path: path)
        #expect(replay.count == 1)
        #expect(replay.response(method: "GET", url: "http://a.test/big", body: nil) == nil)
        #expect(
            replay.missMessage(method: "GET", url: "http://a.test/big")
                == "no recorded response matches GET http://a.test/big in the recording \(path) (it holds that "
                + "request without its response body, larger than the recording kept)")
        #expect(
            replay.missMessage(method: "GET", url: "http://a.test/other")
                == "no recorded response matches GET http://a.test/other in the recording \(path)")
        #expect(replay.response(method: "GET", url: "http://a.test/small", body: nil)?.body == Array("ok".utf8))
    }

    @Test("a request body is kept up to the bound; past it only its size and the whole body's SHA-256")
    func requestBodyBound() {
        var exchange = Self.exchange()
        exchange.appendRequestBody([1, 2, 3], keepingAtMost: 5)
        exchange.appendRequestBody([4, 5], keepingAtMost: 5)
        #expect(exchange.requestBody == [1, 2, 3, 4, 5])
        #expect(!exchange.isRequestBodyOmitted)
        exchange.appendRequestBody([6], keepingAtMost: 5)
        exchange.appendRequestBody([7, 8], keepingAtMost: 5)
        #expect(exchange.requestBody == nil)
        #expect(exchange.isRequestBodyOmitted)
        #expect(exchange.requestBodyBytes == 8)
        #expect(exchange.requestBodySHA256 == SHA256.hash([1, 2, 3, 4, 5, 6, 7, 8]))
    }

    @Test("a request body larger than the recording keeps is written by its size and digest, and still matches")
    func omittedRequestBody() throws {
        let path = NSTemporaryDirectory() + "omitted-request-\(UUID().uuidString).har"
        let recorder = try HARRecorder(path: path, maximumBodyBytes: 4)
        var upload = Self.exchange(url: "http://a.test/upload")
        upload.method = "PUT"
        for piece in ["abc", "def", "g"] {
            upload.appendRequestBody(Array(piece.utf8), keepingAtMost: recorder.maximumBodyBytes)
        }
        upload.appendBody(Array("ok".utf8), at: 0, keepingAtMost: recorder.maximumBodyBytes)
        recorder.add(upload)
        let request = try #require(try Self.entries(path).first?["request"] as? [String: Any])
        let postData = try #require(request["postData"] as? [String: Any])
        #expect(request["bodySize"] as? Int == 7)
        #expect(
            request["_bodySHA256"] as? String
                == SHA256.hash(Array("abcdefg".utf8)).map { String(format: "%02x", $0) }.joined())
        #expect(postData["_bodyOmitted"] as? Bool == true)
        #expect(postData["text"] as? String == "")
        let replay = try HARReplay(path: path)
        let url = "http://a.test/upload"
        #expect(replay.response(method: "PUT", url: url, body: Array("abcdefg".utf8))?.body == Array("ok".utf8))
        #expect(replay.response(method: "PUT", url: url, body: Array("abcdefh".utf8)) == nil)
    }

    @Test("a message's content codings: every Content-Encoding header's, lower-cased, in order, without identity")
    func contentCodings() {
        let headers: [RequestSnapshot.Header] = [
            .init(name: "Content-Encoding", value: "gzip, identity"), .init(name: "Content-Type", value: "text/plain"),
            .init(name: "CONTENT-ENCODING", value: "BR "),
        ]
        #expect(RecordedExchange.contentCodings(in: headers) == ["gzip", "br"])
        #expect(RecordedExchange.contentCodings(in: [.init(name: "Content-Encoding", value: "identity")]).isEmpty)
    }

    @Test("a request whose client stopped sending its body matches any body, after one that matches exactly")
    func incompleteRequestBody() throws {
        let path = NSTemporaryDirectory() + "incomplete-\(UUID().uuidString).har"
        let recorder = try HARRecorder(path: path)
        for (body, answer, isIncomplete) in [("whole", "exact", false), ("cut", "any", true)] {
            var exchange = Self.exchange(url: "http://a.test/upload")
            exchange.method = "POST"
            exchange.appendRequestBody(Array(body.utf8), keepingAtMost: recorder.maximumBodyBytes)
            exchange.isRequestBodyIncomplete = isIncomplete
            exchange.appendBody(Array(answer.utf8), at: 0, keepingAtMost: recorder.maximumBodyBytes)
            recorder.add(exchange)
        }
        let requests = try Self.entries(path).map { $0["request"] as? [String: Any] }
        #expect(requests.map { $0?["_bodyIncomplete"] as? Bool } == [nil, true])
        let replay = try HARReplay(path: path)
        let url = "http://a.test/upload"
        #expect(replay.response(method: "POST", url: url, body: Array("whole".utf8))?.body == Array("exact".utf8))
        #expect(replay.response(method: "POST", url: url, body: Array("other".utf8))?.body == Array("any".utf8))
        #expect(replay.response(method: "PUT", url: url, body: Array("other".utf8)) == nil)
    }

    @Test(
        "a body is written as text when it is UTF-8 without control characters, else as base64",
        arguments: [
            ([UInt8]("line one\n\tline two\r\n".utf8), false), ([0, 0, 0, 0], true), ([0x1B, 0x5B, 0x30, 0x6D], true),
            ([0xFF, 0xFE], true), ([UInt8]("caf\u{E9}".utf8), false),
        ])
    func textOrBase64(_ body: [UInt8], isBase64: Bool) throws {
        let path = NSTemporaryDirectory() + "text-\(UUID().uuidString).har"
        let recorder = try HARRecorder(path: path)
        var exchange = Self.exchange()
        exchange.appendBody(body, at: 0, keepingAtMost: recorder.maximumBodyBytes)
        recorder.add(exchange)
        let response = try #require(try Self.entries(path).first?["response"] as? [String: Any])
        let content = try #require(response["content"] as? [String: Any])
        #expect((content["encoding"] as? String == "base64") == isBase64)
        #expect(try HARReplay(path: path).response(method: "GET", url: "http://a.test/file", body: nil)?.body == body)
    }
}
