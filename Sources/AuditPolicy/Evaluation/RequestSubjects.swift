import AuditRegex

/// The match subjects of one request, built once per evaluation, each only when a rule asks for it.
///
/// It does not keep the request (copying one into it cost reference counts on every evaluation):
/// each call takes the request the subjects are of.
struct RequestSubjects {
    private var lazyParts: URLParts?
    private var url: MatchSubject?
    private var host: MatchSubject?
    private var path: MatchSubject?
    private var query: MatchSubject?
    private var method: MatchSubject?
    private var headers: [String: MatchSubject] = [:]

    /// The URL split and normalized, made on first use: most requests are decided without it.
    private mutating func parts(of request: AuditRequest) -> URLParts {
        if let parts = lazyParts { return parts }
        let parts = URLParts(request.url)
        lazyParts = parts
        return parts
    }

    /// The subject for `field`, or nil when the request has no such header.
    mutating func subject(for field: RequestField, of request: AuditRequest) -> MatchSubject? {
        switch field {
        case .url:
            if url == nil {
                // Most URLs are sent normalized: then the subject is the URL itself, not a copy.
                url =
                    URLParts.isNormalized(request.url)
                    ? MatchSubject(request.url) : MatchSubject(bytes: parts(of: request).normalizedBytes)
            }
            return url
        case .host:
            if host == nil {
                let parts = parts(of: request)
                host = MatchSubject(bytes: Array(parts.normalizedBytes[parts.hostRange]))
            }
            return host
        case .path:
            if path == nil { path = MatchSubject(bytes: Array(parts(of: request).requestPathBytes)) }
            return path
        case .query:
            if query == nil {
                let parts = parts(of: request)
                query = MatchSubject(bytes: Array(parts.normalizedBytes[parts.queryRange]))
            }
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
