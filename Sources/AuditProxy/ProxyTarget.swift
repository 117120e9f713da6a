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

    /// The request URL the policy sees for plain HTTP.
    var httpURL: String { "http://\(hostHeader)\(path)" }

    /// The URL the policy sees for a CONNECT tunnel, in canonical form: `https://HOST/`, with
    /// `:PORT` when not 443.
    var tunnelURL: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == 443 ? "https://\(name)/" : "https://\(name):\(port)/"
    }

    /// No target: for the record of a request that could not be sent.
    static let unknown = ProxyTarget(host: "", port: 0, path: "")

    private init(host: String, port: Int, path: String) {
        (self.host, self.port, self.path) = (host, port, path)
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
        guard Self.hostAndPort(Substring(authority), defaultPort: nil) != nil,
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

    /// `host[:port]` split; user info is refused, the host lowercased, the port checked.
    private static func hostAndPort(_ authority: Substring, defaultPort: Int?) -> (String, Int)? {
        guard !authority.isEmpty, !authority.utf8.contains(UInt8(ascii: "@")) else { return nil }
        var host: Substring
        var portText: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { return nil }
                portText = after.dropFirst()
            }
        } else if let colon = authority.lastIndex(of: ":") {
            host = authority[..<colon]
            portText = authority[authority.index(after: colon)...]
        } else {
            host = authority
        }
        guard !host.isEmpty,
            !host.utf8.contains(where: {
                $0 == UInt8(ascii: " ") || $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "\\")
            })
        else { return nil }
        let port: Int
        if let portText {
            guard let value = Int(portText), (1...65_535).contains(value) else { return nil }
            port = value
        } else {
            guard let defaultPort else { return nil }
            port = defaultPort
        }
        let isLowercase = !host.utf8.contains { (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains($0) }
        return (isLowercase ? String(host) : host.lowercased(), port)
    }
}
