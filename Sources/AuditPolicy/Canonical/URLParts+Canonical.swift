extension URLParts {
    /// Whether `url` is surely its own canonical form, so that a policy can match and index the
    /// URL as sent rather than a canonical copy; false also when it would take the full parse to
    /// tell.
    ///
    /// True for `http://` or `https://` as written, a host of lower-case letters, digits, dots and
    /// dashes that does not end in a dot (an IPv4 address as four decimal parts), a port other than
    /// the default without leading zeros, then a path and query of printable ASCII with no byte the
    /// canonical form escapes or decodes, no `//` or dot segment in the path, percent-escapes only
    /// of reserved bytes in upper-case hex, and no fragment. Most URLs are sent so. One call of the C
    /// kernel `url_is_canonical`, which reads scheme, host, port, path and query in one pass.
    static func isCanonical(_ url: String) -> Bool {
        url.utf8.span.isCanonicalURL()
    }

    /// The parts of `url` without the full parse when what keeps it from its canonical form is
    /// what one pass of copying fixes — a fragment, an empty path, escapes of unreserved
    /// characters or in lower-case hex, repeated slashes (most URLs that are not canonical as
    /// sent); nil otherwise.
    static func lightlyCanonicalized(_ url: String) -> URLParts? {
        guard let (bytes, changes) = url.utf8.span.lightlyCanonicalizedURL() else { return nil }
        return URLParts(
            canonicalBytes: bytes, authority: bytes[4] == UInt8(ascii: "s") ? 8 : 7,
            changes: URLChanges(rawValue: changes))
    }

    /// The parts of `url`, which ``isCanonical(_:)`` holds for (the caller has checked): no second
    /// check, no parse.
    init(knownCanonical url: String) {
        let bytes = Array(url.utf8)
        self.init(canonicalBytes: bytes, authority: bytes[4] == UInt8(ascii: "s") ? 8 : 7, changes: [])
    }

    /// The parts of `bytes`, an `http(s)` URL ``isCanonical(_:)-(Span<UInt8>)`` holds for, whose
    /// authority starts at `authority`.
    init(canonicalBytes bytes: [UInt8], authority: Int, changes: URLChanges) {
        normalizedBytes = bytes
        var hostEnd = authority
        while hostEnd < bytes.count, bytes[hostEnd] != UInt8(ascii: ":"), bytes[hostEnd] != UInt8(ascii: "/") {
            hostEnd += 1
        }
        hostRange = authority..<hostEnd
        var pathStart = hostEnd
        if hostEnd < bytes.count, bytes[hostEnd] == UInt8(ascii: ":") {
            var portEnd = hostEnd + 1
            var value = 0
            while portEnd < bytes.count, bytes[portEnd] != UInt8(ascii: "/") {
                value = value * 10 + Int(bytes[portEnd] &- UInt8(ascii: "0"))
                portEnd += 1
            }
            port = value
            pathStart = portEnd
        }
        let question = bytes[pathStart...].firstIndex(of: UInt8(ascii: "?"))
        pathRange = pathStart..<(question ?? bytes.count)
        queryRange = question.map { ($0 + 1)..<bytes.count } ?? bytes.count..<bytes.count
        self.changes = changes
        isSpecial = true
        schemeLength = authority - 3
    }
}
