extension CanonicalURL {
    /// The server a `Host` header value names for a request of `scheme`: its host in canonical form
    /// and its port (nil when it is the scheme's default); nil when the value is not a bare host and
    /// port (a path, query, fragment or user info in it, or a host the URL Standard refuses).
    public static func server(namedByHostHeader value: String, scheme: String) -> (host: String, port: Int?)? {
        guard !value.isEmpty, !value.utf8.contains(where: { "/?#@\\".utf8.contains($0) }),
            let named = try? CanonicalURL(scheme + "://" + value), !named.host.isEmpty
        else { return nil }
        return (named.host, named.port)
    }

    /// Whether the `Host` header value `value` names the server this URL is sent to: the same host
    /// in canonical form and the same port, the scheme's default implied.
    public func isNamed(byHostHeader value: String) -> Bool {
        if value == authority { return true }
        guard let named = Self.server(namedByHostHeader: value, scheme: scheme) else { return false }
        return named.host == host && named.port == port
    }
}
