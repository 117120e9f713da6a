import AuditPolicy

/// Where a proxied request goes: the server's host and port, whether it speaks TLS, and the request
/// target to send it.
struct ProxyTarget: Equatable, Sendable {
    /// Host name or address, as written (IPv6 without brackets).
    let host: String
    let port: Int
    /// The origin-form target (`/path?query`); empty for a tunnel.
    let path: String
    /// Whether the server is reached over TLS (an `https` URL, inside an intercepted tunnel or
    /// redirected to); a CONNECT's target is not: its bytes pass through.
    var isSecure = false

    /// `host:port`.
    var authority: String {
        let name = host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host
        return "\(name):\(port)"
    }

    /// The key an upstream connection is kept under: the authority, and whether it is TLS.
    var upstreamKey: String { (isSecure ? "https://" : "http://") + authority }

    /// The default port of the target's scheme.
    var defaultPort: Int { isSecure ? 443 : 80 }

    /// The `Host` header value: the port only when it is not the scheme's default.
    var hostHeader: String {
        let name = host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host
        return port == defaultPort ? name : "\(name):\(port)"
    }

    /// The URL the policy sees for a CONNECT tunnel, in canonical form: `https://HOST/`, with
    /// `:PORT` when not 443; the origin of an intercepted tunnel's requests.
    var tunnelURL: String {
        let name = host.utf8.contains(UInt8(ascii: ":")) ? "[\(host)]" : host
        return port == 443 ? "https://\(name)/" : "https://\(name):\(port)/"
    }

    /// Whether `uri` is in absolute form with the `http` scheme (any case), as a proxy request is.
    static func isAbsoluteHTTP(_ uri: String) -> Bool {
        let prefix = "http:".utf8
        return uri.utf8.count > prefix.count && zip(uri.utf8, prefix).allSatisfy({ $0 | 0x20 == $1 || ($0 == $1) })
    }

    /// The target of a canonical `http` URL (or `https` when `allowsTLS`): its host and port, and its
    /// path and query as the request target, exactly as the policy decided them.
    init?(canonical url: CanonicalURL, allowsTLS: Bool = false) {
        let isSecure = url.scheme == "https"
        guard url.scheme == "http" || (allowsTLS && isSecure), !url.host.isEmpty else { return nil }
        (host, port, path) = (url.host, url.port ?? (isSecure ? 443 : 80), url.requestTarget)
        self.isSecure = isSecure
    }

    /// The target of an absolute `http` URL (or `https` when `allowsTLS`), in canonical form: a
    /// request's, or a `redirect` rule's target; nil when it is neither or is invalid.
    init?(url: String, allowsTLS: Bool) {
        guard let canonical = try? CanonicalURL(url) else { return nil }
        self.init(canonical: canonical, allowsTLS: allowsTLS)
    }

    /// The target of an absolute-form `http://` request URI, in canonical form; nil when it is not
    /// one or is invalid.
    init?(absoluteURI uri: String) {
        guard Self.isAbsoluteHTTP(uri) else { return nil }
        self.init(url: uri, allowsTLS: false)
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
    /// default port of the target's scheme implied).
    func isNamed(byHostHeader host: String) -> Bool {
        // Most clients write the target's own canonical form: no parse needed.
        if host == hostHeader || host == authority { return true }
        guard let named = CanonicalURL.server(namedByHostHeader: host, scheme: isSecure ? "https" : "http") else {
            return false
        }
        return named.host == self.host && (named.port ?? defaultPort) == port
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
