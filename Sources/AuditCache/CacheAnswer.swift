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
        let age = RequestSnapshot.Header(name: "Age", value: String(self.age))
        let whole = [RequestSnapshot.Header(name: "Content-Length", value: String(length)), age]
        if isNotModified(for: request) { return CacheAnswer(status: 304, headers: head.headers + whole, body: 0..<0) }
        guard request.method == "GET", head.status == 200, let range = request.value("range"),
            request.value("if-range").map(isNamed(byIfRange:)) ?? true
        else {
            return CacheAnswer(
                status: head.status, headers: head.headers + whole, body: 0..<(request.method == "HEAD" ? 0 : length))
        }
        switch ByteRange(range)?.selection(ofLength: length) {
        case nil:
            return CacheAnswer(status: head.status, headers: head.headers + whole, body: 0..<length)
        case .unsatisfiable:
            let refusal = [
                RequestSnapshot.Header(name: "Content-Range", value: "bytes */\(length)"),
                RequestSnapshot.Header(name: "Content-Length", value: "0"), age,
            ]
            return CacheAnswer(status: 416, headers: head.headers + refusal, body: 0..<0)
        case .part(let part):
            let partial = [
                RequestSnapshot.Header(
                    name: "Content-Range", value: "bytes \(part.lowerBound)-\(part.upperBound - 1)/\(length)"),
                RequestSnapshot.Header(name: "Content-Length", value: String(part.count)), age,
            ]
            return CacheAnswer(status: 206, headers: head.headers + partial, body: part)
        }
    }

    /// Whether an `If-Range` value names this response (RFC 9110 §13.1.5): its strong `ETag`,
    /// compared strongly, or its `Last-Modified` date exactly.
    private func isNamed(byIfRange value: String) -> Bool {
        let value = Substring(value.trimmingSpaces)
        if value.hasPrefix("\"") || value.hasPrefix("W/") {
            guard let etag = head.value("etag"), !etag.hasPrefix("W/"), !value.hasPrefix("W/") else { return false }
            return value == Substring(etag.trimmingSpaces)
        }
        guard let date = HTTPDate.parse(String(value)), let modified = head.value("last-modified") else {
            return false
        }
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
