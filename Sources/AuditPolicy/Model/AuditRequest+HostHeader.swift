extension AuditRequest {
    /// Why the request's `Host` header would have its server act on another request than the one
    /// decided, or nil: two `Host` headers, or one that names another server than the URL.
    ///
    /// A server acts on the `Host` header, a policy decides the URL: an app that sends
    /// `http://10.0.0.5/admin` with `Host: blocked.example` reaches `blocked.example`'s site on that
    /// server, which no rule on `blocked.example` saw. Such a request is refused whatever the rules
    /// say, as `audit proxy` refuses it with 400. A `CONNECT` is exempt: it names its tunnel's
    /// server in its target, and clients send it with the proxy's own `Host`.
    public var hostHeaderContradiction: String? {
        guard method != "CONNECT" else { return nil }
        var hostHeader: String?
        for header in headers where header.name.utf8.count == 4 && header.name.lowercased() == "host" {
            if hostHeader != nil { return "the request has more than one Host header" }
            hostHeader = header.value
        }
        guard let hostHeader, case .success(let url) = canonicalURL, !url.isNamed(byHostHeader: hostHeader) else {
            return nil
        }
        return "its Host header '\(hostHeader)' names another server than its URL (\(url.authority))"
    }
}
