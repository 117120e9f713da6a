import Foundation

/// One request and its response as a recording keeps them (not yet redacted): what was sent, what
/// came back, and when each piece of the body came.
public struct RecordedExchange: Sendable {
    /// A piece of the response body and when it came, in milliseconds after the response head.
    public struct Chunk: Sendable, Equatable {
        /// Milliseconds after the response head.
        public var milliseconds: Double
        /// The bytes.
        public var bytes: [UInt8]

        /// A chunk.
        public init(milliseconds: Double, bytes: [UInt8]) {
            self.milliseconds = milliseconds
            self.bytes = bytes
        }
    }

    /// When the request started.
    public var started: Date
    /// The method, upper-case.
    public var method: String
    /// The URL the request went to.
    public var url: String
    /// The request's headers, as sent.
    public var requestHeaders: [RequestSnapshot.Header]
    /// The request body (nil: none), as the recording keeps it: nothing when it is larger than the
    /// recording keeps (``isRequestBodyOmitted``), its content coding undone when it was sent with
    /// one (``decodeRequestBody(_:)``).
    public private(set) var requestBody: [UInt8]?
    /// Whether the request body is larger than the recording keeps: only its size and digest are.
    public var isRequestBodyOmitted: Bool { requestBody == nil && sentBodyHash != nil }
    /// The hash of the request body as sent, while ``requestBody`` does not hold those bytes.
    private var sentBodyHash: SHA256?
    /// The bytes of the request body appended so far.
    public private(set) var requestBodyBytes = 0
    /// Whether the client stopped sending the request body before its end, because the server
    /// answered first: a replay matches the request on any body.
    public var isRequestBodyIncomplete = false
    /// The content coding (`Content-Encoding`) the request body still carries because it could not
    /// be undone; nil when it carries none.
    public var requestContentCoding: String?
    /// The response status and its reason phrase.
    public var status: Int
    /// The reason phrase (`OK`).
    public var statusText: String
    /// The response's headers, as received.
    public var responseHeaders: [RequestSnapshot.Header]
    /// The response body, as the client's application reads it (its content coding undone, as HAR
    /// keeps it), unless ``contentCoding`` names a coding it still carries.
    public var chunks: [Chunk]
    /// The content coding (`Content-Encoding`) the chunks still carry because it could not be
    /// undone; nil when they carry none.
    public var contentCoding: String?
    /// The body's size as it came, before its content coding was undone; nil when it is the
    /// chunks' size.
    public var transferredBodyBytes: Int?
    /// The size of a response body larger than the recording keeps (its pieces were dropped); nil
    /// when the body is kept whole.
    public var omittedBodyBytes: Int?
    /// The bytes of the pieces appended so far.
    private var appendedBodyBytes = 0
    /// Milliseconds from the request's start to the response head.
    public var waitMilliseconds: Double

    /// An exchange.
    public init(
        started: Date, method: String, url: String, requestHeaders: [RequestSnapshot.Header], requestBody: [UInt8]?,
        status: Int, statusText: String, responseHeaders: [RequestSnapshot.Header], chunks: [Chunk],
        waitMilliseconds: Double
    ) {
        self.started = started
        self.method = method
        self.url = url
        self.requestHeaders = requestHeaders
        self.requestBody = requestBody
        requestBodyBytes = requestBody?.count ?? 0
        self.status = status
        self.statusText = statusText
        self.responseHeaders = responseHeaders
        self.chunks = chunks
        self.waitMilliseconds = waitMilliseconds
    }

    /// Adds a piece of the response body that came `milliseconds` after the head, unless the body
    /// has grown past `limit` bytes: then every piece is dropped and only the body's size is kept
    /// (``omittedBodyBytes``), so that a recording never holds more than `limit` of a body.
    public mutating func appendBody(_ bytes: [UInt8], at milliseconds: Double, keepingAtMost limit: Int) {
        appendedBodyBytes += bytes.count
        guard omittedBodyBytes == nil, appendedBodyBytes <= limit else {
            omittedBodyBytes = appendedBodyBytes
            chunks = []
            return
        }
        if !bytes.isEmpty { chunks.append(Chunk(milliseconds: milliseconds, bytes: bytes)) }
    }

    /// The SHA-256 of the whole request body as sent, on which a replay matches a request whose
    /// body the recording does not keep (``isRequestBodyOmitted``).
    public var requestBodySHA256: [UInt8] {
        sentBodyHash?.finalize() ?? SHA256.hash(requestBody ?? [])
    }

    /// Adds a piece of the request body, unless the body has grown past `limit` bytes: then the
    /// bytes kept are dropped, and only the body's size and digest are kept from then on
    /// (``isRequestBodyOmitted``).
    public mutating func appendRequestBody(_ bytes: some Collection<UInt8>, keepingAtMost limit: Int) {
        requestBodyBytes += bytes.count
        if isRequestBodyOmitted {
            sentBodyHash?.update(bytes)
        } else if requestBodyBytes > limit {
            var hash = SHA256()
            hash.update(requestBody ?? [])
            hash.update(bytes)
            sentBodyHash = hash
            requestBody = nil
        } else if requestBody == nil {
            requestBody = Array(bytes)
        } else {
            requestBody?.append(contentsOf: bytes)
        }
    }

    /// The content codings the `Content-Encoding` headers of `headers` list, lower-cased, in the
    /// order they were applied, without `identity`.
    public static func contentCodings(in headers: [RequestSnapshot.Header]) -> [String] {
        headers.filter { $0.name.equalsIgnoringASCIICase("content-encoding") }
            .flatMap { $0.value.split(separator: ",") }
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { !$0.isEmpty && $0 != "identity" }
    }

    /// Replaces the request body kept with `decoded`, its content coding undone: a replay matches
    /// the request on the decoded body, as it decodes a live request's.
    public mutating func decodeRequestBody(_ decoded: [UInt8]) {
        guard requestBody != nil else { return }
        requestBody = decoded
    }

    /// Notes a response body of `bytes` that is not kept.
    public mutating func omitBody(bytes: Int) {
        appendedBodyBytes = bytes
        omittedBodyBytes = bytes
        chunks = []
    }
}
