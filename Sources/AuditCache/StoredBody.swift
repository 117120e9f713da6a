import AuditReport
import Foundation

/// The body of a stored response, read in chunks from its open file.
///
/// The file stays open while the body is read, so an entry replaced or evicted meanwhile is still
/// read whole: a reader never sees a mix of two entries.
public final class StoredBody: Sendable {
    /// Set once; only `pread`, which keeps no file position, reads it, so any thread may. -1 for a
    /// body held in memory.
    private let descriptor: Int32
    /// A small body, held in memory with its head so that a hit reads no file.
    private let bytes: [UInt8]?
    /// The body's length in bytes.
    public let length: Int

    init(descriptor: Int32, length: Int) {
        self.descriptor = descriptor
        self.bytes = nil
        self.length = length
    }

    init(bytes: [UInt8]) {
        self.descriptor = -1
        self.bytes = bytes
        self.length = bytes.count
    }

    deinit { if descriptor >= 0 { POSIXFile.close(descriptor) } }

    /// Up to `maximum` bytes from `offset`; fewer at the end, empty past it (or when the file cannot
    /// be read).
    public func chunk(at offset: Int, maximum: Int = 64 * 1024) -> [UInt8] {
        let count = max(0, min(maximum, length - offset))
        if let bytes { return count == 0 ? [] : Array(bytes[offset..<offset + count]) }
        return POSIXFile.read(descriptor, count: count, at: offset)
    }

    /// Adds the bytes `range` of the body to `exchange` as one piece, `milliseconds` after the
    /// response head; only their count, unread, when it is larger than `limit` (what the recording
    /// keeps of a body).
    public func record(
        _ range: Range<Int>, into exchange: inout RecordedExchange, at milliseconds: Double = 0,
        keepingAtMost limit: Int
    ) {
        guard range.count <= limit else { return exchange.omitBody(bytes: range.count) }
        exchange.appendBody(chunk(at: range.lowerBound, maximum: range.count), at: milliseconds, keepingAtMost: limit)
    }

    /// The whole body (for small bodies and tests).
    public func readAll() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(length)
        while bytes.count < length {
            let next = chunk(at: bytes.count)
            if next.isEmpty { break }
            bytes += next
        }
        return bytes
    }
}

/// A response served from the cache: its head and its body.
public struct StoredResponse: Sendable {
    /// The status, headers and timing kept.
    public let head: StoredHead
    /// The body.
    public let body: StoredBody
    /// How old the response was when it was looked up, in seconds (RFC 9111 §4.2.3).
    let exactAge: Double

    /// How old the response is, in whole seconds, when it was looked up (the `Age` header).
    public var age: Int { Int(exactAge) }

    /// The headers to serve it with: the stored ones, `Content-Length`, and `Age` (RFC 9111 §5.1).
    public var servedHeaders: [RequestSnapshot.Header] {
        headers(adding: [("Content-Length", String(head.bodyLength))])
    }

    /// The stored headers, then `added`, then `Age`.
    func headers(adding added: [(name: String, value: String)]) -> [RequestSnapshot.Header] {
        var headers = head.headers
        headers.reserveCapacity(headers.count + added.count + 1)
        for header in added { headers.append(RequestSnapshot.Header(name: header.name, value: header.value)) }
        headers.append(RequestSnapshot.Header(name: "Age", value: String(age)))
        return headers
    }
}

extension StoredResponse {
    /// Whether `request`'s own condition holds for this response, so that the client is answered
    /// 304 Not Modified (RFC 9110 §13.2.2): `If-None-Match` naming its `ETag` (weak comparison) or
    /// `*`; else `If-Modified-Since` no earlier than its `Last-Modified`.
    func isNotModified(for request: CacheRequest) -> Bool {
        if let tags = request.value("if-none-match") {
            guard let etag = head.value("etag") else { return false }
            let weak = { (tag: Substring) in tag.hasPrefix("W/") ? tag.dropFirst(2) : tag }
            return tags.split(separator: ",").contains { candidate in
                let tag = Substring(candidate.trimmingSpaces)
                return tag == "*" || weak(tag) == weak(Substring(etag))
            }
        }
        guard let since = request.value("if-modified-since").flatMap(HTTPDate.parse),
            let modified = head.value("last-modified").flatMap(HTTPDate.parse)
        else { return false }
        return modified <= since
    }
}
