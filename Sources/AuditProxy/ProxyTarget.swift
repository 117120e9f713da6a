import AuditPolicy

/// Where a proxied request goes: the server's host and port, and the request target to send it.
struct ProxyTarget: Equatable, Sendable {
    /// Host name or address, as written (IPv6 without brackets).
    let host: String
    let port: Int
    /// The origin-form target (`/path?query`) for plain HTTP; empty for a tunnel.
    let path: String

    /// `host:port`, the key an upstream connection is kept under.
    var authority: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return "\(name):\(port)"
    }

    /// The `Host` header value: the port only when it is not 80.
    var hostHeader: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == 80 ? name : "\(name):\(port)"
    }

    /// The URL the policy sees for a CONNECT tunnel, in canonical form: `https://HOST/`, with
    /// `:PORT` when not 443.
    var tunnelURL: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == 443 ? "https://\(name)/" : "https://\(name):\(port)/"
    }

    /// Whether `uri` is in absolute form with the `http` scheme (any case), as a proxy request is.
    static func isAbsoluteHTTP(_ uri: String) -> Bool {
        let prefix = "http:".utf8
        return uri.utf8.count > prefix.count && zip(uri.utf8, prefix).allSatisfy({ $0 | 0x20 == $1 || ($0 == $1) })
    }

    /// The target of a canonical `http` URL: its host and port, and its path and query as the
    /// request target, exactly as the policy decided them.
    init?(canonical url: CanonicalURL) {
        guard url.scheme == "http", !url.host.isEmpty else { return nil }
        (host, port, path) = (url.host, url.port ?? 80, url.requestTarget)
    }

    /// The target of an absolute-form `http://` request URI, in canonical form; nil when it is not
    /// one or is invalid.
    init?(absoluteURI uri: String) {
        guard Self.isAbsoluteHTTP(uri), let url = try? CanonicalURL(uri) else { return nil }
        self.init(canonical: url)
    }

    /// The target of a CONNECT request's `host:port`, the host in canonical form; nil when it is not
    /// one.
    init?(connectAuthority authority: String) {
        guard Self.explicitPort(authority) != nil,
            let url = try? CanonicalURL("https://" + authority), !url.host.isEmpty, url.path == "/",
            url.query.isEmpty, url.userinfo.isEmpty
        else { return nil }
        (self.host, self.port, self.path) = (url.host, url.port ?? 443, "")
    }

    /// Whether the `Host` header value `host` names this target (compared in canonical form, the
    /// default port of `http` implied).
    func isNamed(byHostHeader host: String) -> Bool {
        guard let named = try? CanonicalURL("http://" + host), named.path == "/", named.query.isEmpty,
            named.userinfo.isEmpty
        else { return false }
        return named.host == self.host && (named.port ?? 80) == port
    }

    /// The target of a URL a `redirect` rule names; nil unless it is an absolute http URL.
    init?(redirectURL url: String) {
        self.init(absoluteURI: url)
    }

    /// The port written after the last `:` outside IPv6 brackets, when it is one from 1 to 65535: a
    /// CONNECT target must name its port.
    private static func explicitPort(_ authority: String) -> Int? {
        guard let colon = authority.lastIndex(of: ":"), !authority[colon...].contains("]"),
            let port = Int(authority[authority.index(after: colon)...]), (1...65_535).contains(port)
        else { return nil }
        return port
    }
}
