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
        for index in headers.indices where headers[index].isHost {
            if hostHeader != nil { return "the request has more than one Host header" }
            hostHeader = headers[index].value
        }
        // Most clients write the URL's own authority: then nothing is parsed.
        guard let hostHeader, !isWrittenAuthority(hostHeader), case .success(let url) = canonicalURL,
            !url.isNamed(byHostHeader: hostHeader)
        else { return nil }
        return "its Host header '\(hostHeader)' names another server than its URL (\(url.authority))"
    }

    /// Whether `value` is the URL's authority exactly as written in an `http://` or `https://` URL, in
    /// the plain form a client writes (lower-case letters, digits, `.`, `-`, `_`, `:`, brackets; ended
    /// by `/`, `?`, `#` or the end): the URL Standard then reads the header and the URL alike.
    private func isWrittenAuthority(_ value: String) -> Bool {
        let bytes = url.utf8.span
        let named = value.utf8.span
        var start = 0
        for byte in "http".utf8 {
            guard start < bytes.count, bytes[start] == byte else { return false }
            start += 1
        }
        if start < bytes.count, bytes[start] == UInt8(ascii: "s") { start += 1 }
        for byte in "://".utf8 {
            guard start < bytes.count, bytes[start] == byte else { return false }
            start += 1
        }
        guard named.count > 0, start + named.count <= bytes.count else { return false }
        for offset in 0..<named.count {
            let byte = named[offset]
            guard byte == bytes[start + offset], Self.isPlainAuthorityByte(byte) else { return false }
        }
        let end = start + named.count
        guard end < bytes.count else { return true }
        return bytes[end] == UInt8(ascii: "/") || bytes[end] == UInt8(ascii: "?") || bytes[end] == UInt8(ascii: "#")
    }

    /// Whether `byte` may stand in an authority the URL Standard keeps as written.
    private static func isPlainAuthorityByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."),
            UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: ":"), UInt8(ascii: "["), UInt8(ascii: "]"):
            true
        default: false
        }
    }
}

extension AuditRequest.Header {
    /// Whether this is a `Host` header, its name in any case (read without allocating).
    package var isHost: Bool {
        let bytes = name.utf8.span
        return bytes.count == 4 && bytes[0] | 0x20 == UInt8(ascii: "h") && bytes[1] | 0x20 == UInt8(ascii: "o")
            && bytes[2] | 0x20 == UInt8(ascii: "s") && bytes[3] | 0x20 == UInt8(ascii: "t")
    }
}
