import AuditReport

/// How a stored response answers one request, as the server would have: its status, its headers,
/// and the bytes of the stored body that follow them.
///
/// The request's own conditions come first (RFC 9110 §13.2.2): a satisfied one is answered 304. A
/// GET of a stored 200 with one byte range (`Range: bytes=0-99`, `bytes=100-`, `bytes=-100`), and
/// an `If-Range` that still names the stored response when it has one, is answered 206 with that
/// part, or 416 when the range starts past the end (RFC 9110 §14). Anything else, several ranges
/// included, gets the whole response, which RFC 9110 allows in place of a range.
public struct CacheAnswer: Sendable, Equatable {
    /// The status code.
    public let status: Int
    /// The headers: the stored ones, `Content-Length`, `Content-Range` for a part, and `Age`.
    public let headers: [RequestSnapshot.Header]
    /// The bytes of the stored body sent after the head: empty for HEAD, 304 and 416.
    public let body: Range<Int>
}

extension StoredResponse {
    /// The answer of this stored response to `request`.
    public func answer(to request: CacheRequest) -> CacheAnswer {
        let length = head.bodyLength
        let status: Int
        let added: [(name: String, value: String)]
        let body: Range<Int>
        if isNotModified(for: request) {
            (status, added, body) = (304, [("Content-Length", String(length))], 0..<0)
        } else {
            switch requestedRange(request)?.selection(ofLength: length) {
            case nil:
                let sent = request.method == "HEAD" ? 0..<0 : 0..<length
                (status, added, body) = (head.status, [("Content-Length", String(length))], sent)
            case .unsatisfiable:
                (status, added, body) = (416, [("Content-Range", "bytes */\(length)"), ("Content-Length", "0")], 0..<0)
            case .part(let part):
                let range = "bytes \(part.lowerBound)-\(part.upperBound - 1)/\(length)"
                (status, added, body) = (206, [("Content-Range", range), ("Content-Length", String(part.count))], part)
            }
        }
        return CacheAnswer(status: status, headers: headers(adding: added), body: body)
    }

    /// The byte range `request` asks of this response: a GET's `Range` of a stored 200, unless
    /// its `If-Range` no longer names this response.
    private func requestedRange(_ request: CacheRequest) -> ByteRange? {
        guard request.method == "GET", head.status == 200, let range = request.value("range") else { return nil }
        if let condition = request.value("if-range"), !isNamed(byIfRange: condition.trimmingSpaces) { return nil }
        return ByteRange(range)
    }

    /// Whether an `If-Range` value names this response (RFC 9110 §13.1.5): its strong `ETag`
    /// (a weak one never does), or its `Last-Modified` date exactly.
    private func isNamed(byIfRange value: String) -> Bool {
        if value.hasPrefix("\"") {
            guard let etag = head.value("etag")?.trimmingSpaces, etag.hasPrefix("\"") else { return false }
            return value == etag
        }
        guard let date = HTTPDate.parse(value), let modified = head.value("last-modified") else { return false }
        return HTTPDate.parse(modified) == date
    }
}

/// One byte range of a `Range` header (RFC 9110 §14.1.2): `first-last`, `first-` or `-suffix`.
struct ByteRange: Equatable {
    let first: Int?
    let last: Int?

    /// What a range selects of a body.
    enum Selection: Equatable {
        /// These bytes.
        case part(Range<Int>)
        /// Nothing: the range starts at or past the end, or is an empty suffix.
        case unsatisfiable
    }

    /// The range of `value`; nil when it is not a single byte range (several ranges, another
    /// unit, a syntax error), which is answered with the whole response.
    init?(_ value: String) {
        let value = value.trimmingSpaces
        guard value.count > 6, value.prefix(6).lowercased() == "bytes=" else { return nil }
        let spec = value.dropFirst(6)
        guard !spec.contains(","), let dash = spec.firstIndex(of: "-") else { return nil }
        let firstText = spec[..<dash].trimmingSpaces
        let lastText = spec[spec.index(after: dash)...].trimmingSpaces
        guard firstText.allSatisfy(\.isASCIIDigit), lastText.allSatisfy(\.isASCIIDigit),
            !(firstText.isEmpty && lastText.isEmpty)
        else { return nil }
        // More digits than an Int holds: past any body's end.
        first = firstText.isEmpty ? nil : Int(firstText) ?? Int.max
        last = lastText.isEmpty ? nil : Int(lastText) ?? Int.max
        if let first, let last, last < first { return nil }
    }

    /// What the range selects of a body of `length` bytes.
    func selection(ofLength length: Int) -> Selection {
        guard let first else {
            let suffix = min(last ?? 0, length)
            return suffix == 0 ? .unsatisfiable : .part(length - suffix..<length)
        }
        guard first < length else { return .unsatisfiable }
        return .part(first..<min(last ?? Int.max - 1, length - 1) + 1)
    }
}
