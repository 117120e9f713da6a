import AuditReport
import Foundation
import Testing

@testable import AuditContentCoding

/// The content codings of a recorded exchange's bodies undone, with real coded bytes.
@Suite struct ContentCodingTests {
    /// 100,000 zero bytes, gzip-coded (132 bytes).
    static let gzipZeros =
        Data(
            base64Encoded:
                "H4sIAAAAAAACA+3BMQEAAADCoPVPbQ0PoAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
                + "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAIBXA32VEdSghgEA") ?? Data()

    /// `{"password": "hunter2"}` and a line feed, as `gzip -n` writes it.
    static let gzipPassword: [UInt8] = Array(
        Data(base64Encoded: "H4sIAAAAAAAAA6tWKkgsLi7PL0pRslJQyijNK0ktMlKq5QIA3alochgAAAA=") ?? Data())

    static func exchange(requestCoding: String?, body: [UInt8]?) -> RecordedExchange {
        RecordedExchange(
            started: Date(), method: "POST", url: "http://a.test/login",
            requestHeaders: requestCoding.map { [RequestSnapshot.Header(name: "Content-Encoding", value: $0)] } ?? [],
            requestBody: body, status: 200, statusText: "OK", responseHeaders: [], chunks: [], waitMilliseconds: 0)
    }

    @Test("the decoder stops at its bound rather than inflating a small body without limit")
    func bound() throws {
        let decoder = try ContentDecoder(codings: ["gzip"], maximumBytes: 10_000)
        #expect(throws: ContentDecoder.Failure.tooLarge) { try decoder.decode(Array(Self.gzipZeros)) }
        let roomy = try ContentDecoder(codings: ["gzip"], maximumBytes: 100_000)
        #expect(try roomy.decode(Array(Self.gzipZeros)) == [UInt8](repeating: 0, count: 100_000))
        try roomy.finish()
    }

    @Test("a body cut short of its coding's end, and a coding it does not know, are failures")
    func failures() throws {
        let decoder = try ContentDecoder(codings: ["gzip"], maximumBytes: 1 << 20)
        _ = try decoder.decode(Array(Self.gzipZeros.prefix(60)))
        #expect(throws: ContentDecoder.Failure.truncated("gzip")) { try decoder.finish() }
        #expect(throws: ContentDecoder.Failure.unsupported("compress")) {
            try ContentDecoder(codings: ["gzip", "compress"], maximumBytes: 1 << 20)
        }
    }

    @Test("a gzip-coded request body is kept decoded, its size that of the bytes sent")
    func requestBodyDecoded() {
        var exchange = Self.exchange(requestCoding: "gzip", body: Self.gzipPassword)
        exchange.undoRequestBodyCoding(keepingAtMost: 1 << 20)
        #expect(exchange.requestBody == Array("{\"password\": \"hunter2\"}\n".utf8))
        #expect(exchange.requestBodyBytes == Self.gzipPassword.count)
        #expect(exchange.requestContentCoding == nil)
    }

    @Test("a replay decodes a live gzip-coded body as a recording keeps it, and matches it redacted, up to its bound")
    func replayDigestDecoded() throws {
        let path = NSTemporaryDirectory() + "empty-\(UUID().uuidString).har"
        try Data(#"{"log": {"entries": []}}"#.utf8).write(to: URL(fileURLWithPath: path))
        let replay = try HARReplay(path: path)
        let headers = [RequestSnapshot.Header(name: "Content-Encoding", value: "gzip")]
        var held = ReplayBodyDigest(holdingAtMost: Self.gzipPassword.count)
        var beyond = ReplayBodyDigest(holdingAtMost: Self.gzipPassword.count - 1)
        for piece in [Self.gzipPassword.prefix(10), Self.gzipPassword.dropFirst(10)] {
            held.update(piece)
            beyond.update(piece)
        }
        let digests = held.finalize(headers: headers, for: replay)
        #expect(digests.redacted == SHA256.hash(Array("{\"password\": \"REDACTED\"}\n".utf8)))
        #expect(digests.sent == SHA256.hash(Self.gzipPassword))
        #expect(beyond.finalize(headers: headers, for: replay) == .init(redacted: nil, sent: digests.sent))
        #expect(held.byteCount == Self.gzipPassword.count)
    }

    @Test(
        "a request body that cannot be decoded is kept as sent, its coding named",
        arguments: [("compress", Self.gzipPassword), ("gzip", Array("not gzip".utf8)), ("gzip, br", Self.gzipPassword)])
    func requestBodyKept(_ coding: String, _ body: [UInt8]) {
        var exchange = Self.exchange(requestCoding: coding, body: body)
        exchange.undoRequestBodyCoding(keepingAtMost: 1 << 20)
        #expect(exchange.requestBody == body)
        #expect(exchange.requestContentCoding == coding)
    }

    @Test("a request body that decodes to more than the recording keeps is kept as sent, its coding named")
    func requestBodyOverBound() {
        var exchange = Self.exchange(requestCoding: "gzip", body: Array(Self.gzipZeros))
        exchange.undoRequestBodyCoding(keepingAtMost: 10_000)
        #expect(exchange.requestBody == Array(Self.gzipZeros))
        #expect(exchange.requestContentCoding == "gzip")
    }

    @Test("a request body without a coding, or empty, is left as it is")
    func requestBodyUncoded() {
        var plain = Self.exchange(requestCoding: nil, body: Self.gzipPassword)
        var empty = Self.exchange(requestCoding: "gzip", body: [])
        plain.undoRequestBodyCoding(keepingAtMost: 1 << 20)
        empty.undoRequestBodyCoding(keepingAtMost: 1 << 20)
        #expect(plain.requestBody == Self.gzipPassword && plain.requestContentCoding == nil)
        #expect(empty.requestBody == [] && empty.requestContentCoding == nil)
    }

    @Test("a gzip-coded response is kept decoded piece by piece, each piece at its time; the size that came is noted")
    func responseBodyDecoded() {
        var exchange = Self.exchange(requestCoding: nil, body: nil)
        exchange.responseHeaders = [RequestSnapshot.Header(name: "Content-Encoding", value: "gzip")]
        let coded = Array(Self.gzipPassword)
        exchange.chunks = [
            .init(milliseconds: 1, bytes: Array(coded[..<5])), .init(milliseconds: 2, bytes: Array(coded[5...])),
        ]
        exchange.undoResponseBodyCoding(keepingAtMost: 1 << 20)
        // The first five bytes (part of gzip's header) decode to nothing: that piece is left out.
        #expect(exchange.chunks.map(\.milliseconds) == [2])
        #expect(exchange.chunks.flatMap(\.bytes) == Array("{\"password\": \"hunter2\"}\n".utf8))
        #expect(exchange.transferredBodyBytes == coded.count)
        #expect(exchange.contentCoding == nil)
    }

    @Test("a response that does not decode as its coding says is kept as it came, its coding named")
    func responseBodyKept() {
        var exchange = Self.exchange(requestCoding: nil, body: nil)
        exchange.responseHeaders = [RequestSnapshot.Header(name: "Content-Encoding", value: "br")]
        exchange.chunks = [.init(milliseconds: 1, bytes: Array("plain text".utf8))]
        exchange.undoResponseBodyCoding(keepingAtMost: 1 << 20)
        #expect(exchange.chunks.flatMap(\.bytes) == Array("plain text".utf8))
        #expect(exchange.contentCoding == "br")
        #expect(exchange.transferredBodyBytes == nil)
    }
}
