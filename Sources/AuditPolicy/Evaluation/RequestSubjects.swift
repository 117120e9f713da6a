import AuditRegex

/// The match subjects of one request, built once per evaluation and shared by every rule.
struct RequestSubjects {
    let url: MatchSubject
    let host: MatchSubject
    let path: MatchSubject
    let query: MatchSubject
    let method: MatchSubject
    private let request: AuditRequest
    private var headers: [String: MatchSubject] = [:]

    init(_ request: AuditRequest) {
        let parts = URLParts(request.url)
        self.request = request
        url = MatchSubject(parts.normalized)
        host = MatchSubject(parts.host)
        path = MatchSubject(parts.requestPath)
        query = MatchSubject(parts.query)
        method = MatchSubject(request.method)
    }

    /// The subject for `field`, or nil when the request has no such header.
    mutating func subject(for field: RequestField) -> MatchSubject? {
        switch field {
        case .url: return url
        case .host: return host
        case .path: return path
        case .query: return query
        case .method: return method
        case .header(let name):
            if let cached = headers[name] { return cached }
            guard let value = request.headerValue(name) else { return nil }
            let subject = MatchSubject(value)
            headers[name] = subject
            return subject
        }
    }
}
