extension URLParts {
    /// Whether `url` is surely its own canonical form, so that a policy can match and index the
    /// URL as sent rather than a canonical copy; false also when it would take the full parse to
    /// tell.
    ///
    /// True for `http://` or `https://` as written, a host of lower-case letters, digits, dots and
    /// dashes that does not end in a dot (an IPv4 address as four decimal parts), a port other than
    /// the default without leading zeros, then a path and query of printable ASCII with no byte the
    /// canonical form escapes or decodes, no `//` or dot segment in the path, percent-escapes only
    /// of reserved bytes in upper-case hex, and no fragment. Most URLs are sent so.
    static func isCanonical(_ url: String) -> Bool {
        isCanonical(url.utf8.span)
    }

    /// ``isCanonical(_:)`` of a URL's bytes: one call of the C kernel `url_is_canonical`, which reads
    /// scheme, host, port, path and query in one pass.
    static func isCanonical(_ bytes: Span<UInt8>) -> Bool {
        bytes.isCanonicalURL()
    }

    /// The parts of `url` without the full parse when it is canonical but for a fragment or the `/`
    /// of an empty path (most URLs that are not canonical as sent); nil otherwise.
    static func nearlyCanonical(_ url: String) -> URLParts? {
        let span = url.utf8.span
        guard let authority = lowerCaseHTTPAuthorityStart(span) else { return nil }
        var bytes = Array(url.utf8)
        var changes: URLChanges = []
        if let hash = bytes.firstIndex(of: UInt8(ascii: "#")) {
            bytes.removeSubrange(hash...)
            changes.insert(.fragmentRemoved)
        }
        var authorityEnd = authority
        while authorityEnd < bytes.count, bytes[authorityEnd] != UInt8(ascii: "/"),
            bytes[authorityEnd] != UInt8(ascii: "?")
        {
            authorityEnd += 1
        }
        if authorityEnd == bytes.count || bytes[authorityEnd] == UInt8(ascii: "?") {
            bytes.insert(UInt8(ascii: "/"), at: authorityEnd)
        }
        guard isCanonical(bytes.span) else { return nil }
        return URLParts(canonicalBytes: bytes, authority: authority, changes: changes)
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

    /// Where the authority starts when `bytes` begins with `https://` or `http://` as written (most
    /// URLs), told by one load; nil otherwise.
    private static func lowerCaseHTTPAuthorityStart(_ bytes: Span<UInt8>) -> Int? {
        guard bytes.count >= 8 else { return nil }
        let word = bytes.word64(at: 0)
        // "https://" and "http://", first byte lowest.
        if word == 0x2F2F_3A73_7074_7468 { return 8 }
        if word & 0x00FF_FFFF_FFFF_FFFF == 0x002F_2F3A_7074_7468 { return 7 }
        return nil
    }
}
