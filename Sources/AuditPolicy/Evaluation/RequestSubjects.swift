import AuditRegex

/// The match subjects of one request, built once per evaluation, each only when a rule asks for it.
struct RequestSubjects {
    private let request: AuditRequest
    private let parts: URLParts
    private var url: MatchSubject?
    private var host: MatchSubject?
    private var path: MatchSubject?
    private var query: MatchSubject?
    private var method: MatchSubject?
    private var headers: [String: MatchSubject] = [:]

    init(_ request: AuditRequest) {
        self.request = request
        self.parts = URLParts(request.url)
    }

    /// The subject for `field`, or nil when the request has no such header.
    mutating func subject(for field: RequestField) -> MatchSubject? {
        switch field {
        case .url: return Self.cached(&url) { MatchSubject(bytes: parts.normalizedBytes) }
        case .host: return Self.cached(&host) { MatchSubject(bytes: Array(parts.normalizedBytes[parts.hostRange])) }
        case .path: return Self.cached(&path) { MatchSubject(bytes: Array(parts.requestPathBytes)) }
        case .query: return Self.cached(&query) { MatchSubject(bytes: Array(parts.normalizedBytes[parts.queryRange])) }
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
