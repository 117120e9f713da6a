import AuditRegex

/// The match subjects of one request, built once per evaluation, each only when a rule asks for it.
///
/// It does not keep the request (copying one into it cost reference counts on every evaluation):
/// each call takes the request the subjects are of.
struct RequestSubjects {
    /// The URL's subject once ``hasURL``. Not optional: a match reads it in place, where unwrapping
    /// an optional copied it (two reference counts a match).
    private var url = MatchSubject("")
    private var hasURL = false
    /// Whether the request's URL is canonical as sent, when the caller has checked already.
    var isURLCanonical: Bool?
    /// Everything but the URL's subject, made on first use: most policies read only the URL, and
    /// an evaluation then makes and drops one optional reference here rather than seven fields.
    private var others: Others?

    /// The subjects of the other fields, and the URL's parts.
    private final class Others {
        var parts: URLParts?
        var host: MatchSubject?
        var path: MatchSubject?
        var query: MatchSubject?
        var userinfo: MatchSubject?
        var method: MatchSubject?
        var headers: [String: MatchSubject] = [:]
    }

    private mutating func othersMade() -> Others {
        if let others { return others }
        let made = Others()
        others = made
        return made
    }

    /// Why `request`'s URL is invalid, or nil when it is valid.
    mutating func rejection(of request: AuditRequest) -> URLRejection? {
        parts(of: request).rejection
    }

    /// The URL split and canonicalized, made on first use: most requests are decided without it.
    private mutating func parts(of request: AuditRequest) -> URLParts {
        let others = othersMade()
        if let parts = others.parts { return parts }
        let parts = isURLCanonical == true ? URLParts(knownCanonical: request.url) : URLParts(request.url)
        others.parts = parts
        return parts
    }

    /// Whether `pattern` matches the subject for `field`; false when the request has no such
    /// header.
    ///
    /// The URL's subject, which most rules read, is matched where it is kept: handing out a copy
    /// cost two reference counts a match.
    mutating func matches(_ pattern: Pattern, field: RequestField, of request: AuditRequest) throws(PatternError)
        -> Bool
    {
        if case .url = field { return try matchesURL(pattern, of: request) }
        guard let subject = subject(for: field, of: request) else { return false }
        return try pattern.matches(subject)
    }

    /// Whether `pattern` matches `request`'s URL (canonical).
    mutating func matchesURL(_ pattern: Pattern, of request: AuditRequest) throws(PatternError) -> Bool {
        makeURL(of: request)
        return try pattern.matches(url)
    }

    /// Makes the URL's subject if it is not made yet.
    private mutating func makeURL(of request: AuditRequest) {
        guard !hasURL else { return }
        // Most URLs are sent canonical: then the subject is the URL itself, not a copy.
        url =
            isURLCanonical ?? URLParts.isCanonical(request.url)
            ? MatchSubject(request.url) : MatchSubject(bytes: parts(of: request).normalizedBytes)
        hasURL = true
    }

    /// The subject for `field`, or nil when the request has no such header.
    mutating func subject(for field: RequestField, of request: AuditRequest) -> MatchSubject? {
        switch field {
        case .url:
            makeURL(of: request)
            return url
        case .host:
            let others = othersMade()
            if others.host == nil {
                let parts = parts(of: request)
                others.host = MatchSubject(bytes: Array(parts.normalizedBytes[parts.hostRange]))
            }
            return others.host
        case .path:
            let others = othersMade()
            if others.path == nil { others.path = MatchSubject(bytes: Array(parts(of: request).requestPathBytes)) }
            return others.path
        case .query:
            let others = othersMade()
            if others.query == nil {
                let parts = parts(of: request)
                others.query = MatchSubject(bytes: Array(parts.normalizedBytes[parts.queryRange]))
            }
            return others.query
        case .userinfo:
            let others = othersMade()
            if others.userinfo == nil { others.userinfo = MatchSubject(bytes: parts(of: request).userinfo) }
            return others.userinfo
        case .method:
            let others = othersMade()
            if others.method == nil { others.method = MatchSubject(request.method) }
            return others.method
        case .header(let name):
            let others = othersMade()
            if let cached = others.headers[name] { return cached }
            guard let value = request.headerValue(name) else { return nil }
            let subject = MatchSubject(value)
            others.headers[name] = subject
            return subject
        }
    }
}
