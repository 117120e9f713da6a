import AuditRegex

/// The match subjects of one request, built once per evaluation, each only when a rule asks for it.
struct RequestSubjects {
    private let request: AuditRequest
    private var lazyParts: URLParts?
    private var url: MatchSubject?
    private var host: MatchSubject?
    private var path: MatchSubject?
    private var query: MatchSubject?
    private var method: MatchSubject?
    private var headers: [String: MatchSubject] = [:]

    init(_ request: AuditRequest) {
        self.request = request
    }

    /// The URL split and normalized, made on first use: most requests are decided without it.
    private var parts: URLParts {
        mutating get {
            if let parts = lazyParts { return parts }
            let parts = URLParts(request.url)
            lazyParts = parts
            return parts
        }
    }

    /// Calls `body` with the URL's raw UTF-8 bytes.
    func withRawURLBytes<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
        var url = request.url
        return url.withUTF8(body)
    }

    /// The subject for `field`, or nil when the request has no such header.
    mutating func subject(for field: RequestField) -> MatchSubject? {
        switch field {
        case .url:
            if url == nil { url = MatchSubject(bytes: parts.normalizedBytes) }
            return url
        case .host:
            if host == nil { host = MatchSubject(bytes: Array(parts.normalizedBytes[parts.hostRange])) }
            return host
        case .path:
            if path == nil { path = MatchSubject(bytes: Array(parts.requestPathBytes)) }
            return path
        case .query:
            if query == nil { query = MatchSubject(bytes: Array(parts.normalizedBytes[parts.queryRange])) }
            return query
        case .method: return Self.cached(&method) { MatchSubject(request.method) }
        case .header(let name):
            if let cached = headers[name] { return cached }
            guard let value = request.headerValue(name) else { return nil }
            let subject = MatchSubject(value)
            headers[name] = subject
            return subject
        }
    }

    @inline(__always)
    private static func cached(_ slot: inout MatchSubject?, _ make: () -> MatchSubject) -> MatchSubject {
        if let subject = slot { return subject }
        let subject = make()
        slot = subject
        return subject
    }
}
