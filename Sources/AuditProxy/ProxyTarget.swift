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

    /// The URL the policy sees for a CONNECT tunnel: `https://HOST`, with `:PORT` when not 443.
    var tunnelURL: String {
        let name = host.contains(":") ? "[\(host)]" : host
        return port == 443 ? "https://\(name)" : "https://\(name):\(port)"
    }

    /// The target of an absolute-form `http://` request URI; nil when it is not one.
    init?(absoluteURI uri: String) {
        let prefix = "http://".utf8
        guard uri.utf8.count > prefix.count,
            zip(uri.utf8, prefix).allSatisfy({ $0 | 0x20 == $1 || ($0 == $1) })
        else { return nil }
        let rest = uri.dropFirst(prefix.count)
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        guard let (host, port) = Self.hostAndPort(rest[..<authorityEnd], defaultPort: 80) else { return nil }
        var path = String(rest[authorityEnd...])
        if let fragment = path.firstIndex(of: "#") { path = String(path[..<fragment]) }
        if path.isEmpty || path.hasPrefix("?") { path = "/" + path }
        (self.host, self.port, self.path) = (host, port, path)
    }

    /// The target of a CONNECT request's `host:port`; nil when it is not one.
    init?(connectAuthority authority: String) {
        guard let (host, port) = Self.hostAndPort(Substring(authority), defaultPort: nil) else { return nil }
        (self.host, self.port, self.path) = (host, port, "")
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
