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
        guard method.utf8.count != 7 || method != "CONNECT" else { return nil }
        var hostHeader: String?
        for index in headers.indices where Self.isHost(headers[index].name) {
            if hostHeader != nil { return "the request has more than one Host header" }
            hostHeader = headers[index].value
        }
        // Most clients write the URL's own authority: then nothing is parsed.
        guard let hostHeader, !isWrittenAuthority(hostHeader), case .success(let url) = canonicalURL,
            !url.isNamed(byHostHeader: hostHeader)
        else { return nil }
        return "its Host header '\(hostHeader)' names another server than its URL (\(url.authority))"
    }

    /// Whether a header `name` is `Host`, in any case.
    private static func isHost(_ name: String) -> Bool {
        let bytes = name.utf8.span
        return bytes.count == 4 && bytes[0] | 0x20 == UInt8(ascii: "h") && bytes[1] | 0x20 == UInt8(ascii: "o")
            && bytes[2] | 0x20 == UInt8(ascii: "s") && bytes[3] | 0x20 == UInt8(ascii: "t")
    }

    /// Whether `value` is the URL's authority exactly as written (between `://` and the next `/`,
    /// `?` or `#`, with no user info).
    private func isWrittenAuthority(_ value: String) -> Bool {
        let bytes = url.utf8.span
        let named = value.utf8.span
        var colon = 0
        while colon < bytes.count, bytes[colon] != UInt8(ascii: ":") { colon += 1 }
        guard colon + 2 < bytes.count, bytes[colon + 1] == UInt8(ascii: "/"), bytes[colon + 2] == UInt8(ascii: "/")
        else { return false }
        let start = colon + 3
        var end = start
        while end < bytes.count {
            let byte = bytes[end]
            if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") { break }
            if byte == UInt8(ascii: "@") { return false }
            end += 1
        }
        guard named.count == end - start else { return false }
        for offset in 0..<named.count where named[offset] != bytes[start + offset] { return false }
        return true
    }
}
