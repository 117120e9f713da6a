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

    /// ``isCanonical(_:)`` of a URL's bytes.
    static func isCanonical(_ bytes: Span<UInt8>) -> Bool {
        guard let authority = lowerCaseHTTPAuthorityStart(bytes) else { return false }
        let hostEnd = bytes.hostSpan(from: authority)
        guard hostEnd > authority, hostEnd < bytes.count, bytes[hostEnd - 1] != UInt8(ascii: ".") else { return false }
        var labelStart = hostEnd - 1
        while labelStart > authority, bytes[labelStart - 1] != UInt8(ascii: ".") { labelStart -= 1 }
        // A last label starting with a digit makes the host an IPv4 address (or invalid): canonical
        // only as four decimal parts of 0–255 without leading zeros.
        if bytes[labelStart] &- UInt8(ascii: "0") < 10, !isDottedDecimal(bytes, from: authority, to: hostEnd) {
            return false
        }
        var pathStart = hostEnd
        if bytes[hostEnd] == UInt8(ascii: ":") {
            // A port other than the scheme's default, written without leading zeros.
            var end = hostEnd + 1
            var port = 0
            while end < bytes.count, bytes[end] &- UInt8(ascii: "0") < 10, end - hostEnd <= 5 {
                port = port * 10 + Int(bytes[end] &- UInt8(ascii: "0"))
                end += 1
            }
            let defaultPort = authority == 8 ? 443 : 80
            guard end > hostEnd + 1, bytes[hostEnd + 1] != UInt8(ascii: "0"), port <= 65_535, port != defaultPort
            else { return false }
            pathStart = end
        }
        guard pathStart < bytes.count, bytes[pathStart] == UInt8(ascii: "/") else { return false }
        return bytes.isCanonicalPathAndQuery(from: pathStart)
    }

    /// Whether `bytes[start..<end]` is four decimal parts of 0–255 without leading zeros.
    private static func isDottedDecimal(_ bytes: Span<UInt8>, from start: Int, to end: Int) -> Bool {
        var parts = 0
        var index = start
        while index < end {
            var value = 0
            let partStart = index
            while index < end, bytes[index] &- UInt8(ascii: "0") < 10, index - partStart < 3 {
                value = value * 10 + Int(bytes[index] &- UInt8(ascii: "0"))
                index += 1
            }
            let length = index - partStart
            guard length > 0, value <= 255, length == 1 || bytes[partStart] != UInt8(ascii: "0") else { return false }
            parts += 1
            if index == end { break }
            guard bytes[index] == UInt8(ascii: "."), parts < 4 else { return false }
            index += 1
        }
        return parts == 4 && index == end
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
