/// A URL split the way policies see it, without Foundation's rewriting: only the scheme and host
/// are changed (lower-cased) and the default port dropped; everything else is kept as sent.
///
/// Works on the UTF-8 bytes: URL syntax is ASCII, so every split happens at an ASCII byte. One
/// buffer holds the normalized URL; host, path and query are ranges of it.
struct URLParts: Sendable {
    /// The normalized URL's bytes.
    let normalizedBytes: [UInt8]
    /// Where the host is in ``normalizedBytes``: lower-cased, no port, no IPv6 brackets.
    let hostRange: Range<Int>
    /// Where the path is in ``normalizedBytes`` (empty when the URL has none).
    let pathRange: Range<Int>
    /// Where the query (after `?`) is in ``normalizedBytes``.
    let queryRange: Range<Int>

    init(_ url: String) {
        self.init(bytes: Array(url.utf8))
    }

    /// Whether `url` is surely its own normalized form, so that a policy can match the URL as sent
    /// rather than a normalized copy; false also when it would take the full split to tell.
    ///
    /// True when the URL has no fragment and either has no scheme, or has a scheme with no
    /// capital followed by an authority of ASCII letters, digits, dots and dashes (no capital, no
    /// userinfo, port or brackets): then normalizing changes nothing.
    static func isNormalized(_ url: String) -> Bool {
        let bytes = url.utf8.span
        guard bytes.firstIndex(of: UInt8(ascii: "#"), from: 0, to: bytes.count) == nil else { return false }
        let authority: Int
        if let start = lowerCaseHTTPAuthorityStart(bytes) {
            authority = start
        } else {
            guard let separator = firstSchemeSeparator(in: bytes), isScheme(bytes, to: separator) else {
                return true
            }
            for index in 0..<separator where bytes[index] &- UInt8(ascii: "A") < 26 { return false }
            authority = separator + 3
        }
        // The authority's bytes, sixteen at a time (a loop of a byte at a time cost about 13
        // instructions a byte).
        let end = bytes.hostSpan(from: authority)
        return end == bytes.count || bytes[end] == UInt8(ascii: "/") || bytes[end] == UInt8(ascii: "?")
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

    /// Splits the URL made of `all`, which becomes the normalized URL when normalizing keeps every
    /// byte where it is.
    private init(bytes all: [UInt8]) {
        let span = all.span
        let end = span.firstIndex(of: UInt8(ascii: "#"), from: 0, to: span.count) ?? span.count
        let bytes = span.extracting(..<end)
        guard let separator = Self.firstSchemeSeparator(in: bytes), Self.isScheme(bytes, to: separator) else {
            normalizedBytes = Array(all[..<end])
            hostRange = 0..<0
            pathRange = 0..<0
            queryRange = 0..<0
            return
        }
        let restStart = separator + 3
        var authorityEnd = restStart
        while authorityEnd < bytes.count, bytes[authorityEnd] != UInt8(ascii: "/"),
            bytes[authorityEnd] != UInt8(ascii: "?")
        {
            authorityEnd += 1
        }
        var hostStart = restStart
        if let at = Self.lastIndex(of: UInt8(ascii: "@"), in: bytes, from: restStart, to: authorityEnd) {
            hostStart = at + 1
        }
        var hostEnd = authorityEnd
        var portStart = authorityEnd
        if hostStart < authorityEnd, bytes[hostStart] == UInt8(ascii: "["),
            let close = bytes.firstIndex(of: UInt8(ascii: "]"), from: hostStart, to: authorityEnd)
        {
            hostEnd = close + 1
            if hostEnd < authorityEnd, bytes[hostEnd] == UInt8(ascii: ":") { portStart = hostEnd + 1 }
        } else if let colon = Self.lastIndex(of: UInt8(ascii: ":"), in: bytes, from: hostStart, to: authorityEnd) {
            hostEnd = colon
            portStart = colon + 1
        }
        let keepsPort =
            portStart < authorityEnd
            && !Self.isDefaultPort(bytes.extracting(portStart..<authorityEnd), scheme: bytes.extracting(..<separator))

        var normalized: [UInt8]
        let lowerHostStart = hostStart
        let lowerHostEnd: Int
        if Self.isASCII(bytes, from: hostStart, to: hostEnd) {
            // Lower-casing ASCII keeps every byte where it is: copy (or keep) the bytes, then fix
            // scheme and host in place.
            let dropped = keepsPort ? 0 : authorityEnd - hostEnd
            if dropped == 0, end == all.count {
                normalized = all
            } else {
                normalized = Array(all[..<hostEnd])
                normalized.append(contentsOf: all[(hostEnd + dropped)..<end])
            }
            for index in 0..<separator { normalized[index] = Self.lowered(normalized[index]) }
            for index in hostStart..<hostEnd { normalized[index] = Self.lowered(normalized[index]) }
            lowerHostEnd = hostEnd
        } else {
            normalized = []
            normalized.reserveCapacity(bytes.count)
            for byte in all[..<separator] { normalized.append(Self.lowered(byte)) }
            normalized.append(contentsOf: all[separator..<hostStart])
            normalized.append(contentsOf: String(decoding: all[hostStart..<hostEnd], as: UTF8.self).lowercased().utf8)
            lowerHostEnd = normalized.count
            if keepsPort { normalized.append(contentsOf: all[hostEnd..<authorityEnd]) }
            normalized.append(contentsOf: all[authorityEnd..<end])
        }
        let pathStart = normalized.count - (bytes.count - authorityEnd)
        let normalizedSpan = normalized.span
        let questionMark = normalizedSpan.firstIndex(of: UInt8(ascii: "?"), from: pathStart, to: normalizedSpan.count)
        pathRange = pathStart..<(questionMark ?? normalized.count)
        queryRange = questionMark.map { ($0 + 1)..<normalized.count } ?? normalized.count..<normalized.count
        if lowerHostEnd - lowerHostStart >= 2, normalized[lowerHostStart] == UInt8(ascii: "["),
            normalized[lowerHostEnd - 1] == UInt8(ascii: "]")
        {
            hostRange = (lowerHostStart + 1)..<(lowerHostEnd - 1)
        } else {
            hostRange = lowerHostStart..<lowerHostEnd
        }
        normalizedBytes = normalized
    }

    var normalized: String { String(decoding: normalizedBytes, as: UTF8.self) }
    var host: String { String(decoding: normalizedBytes[hostRange], as: UTF8.self) }

    /// The path rules with `field=path` see: `/` when the URL has none, as on the request line.
    var requestPathBytes: ArraySlice<UInt8> {
        pathRange.isEmpty ? [UInt8(ascii: "/")][...] : normalizedBytes[pathRange]
    }

    private static func isDefaultPort(_ port: Span<UInt8>, scheme: Span<UInt8>) -> Bool {
        let defaultPort: StaticString
        if spells(scheme, "http") || spells(scheme, "ws") {
            defaultPort = "80"
        } else if spells(scheme, "https") || spells(scheme, "wss") {
            defaultPort = "443"
        } else if spells(scheme, "ftp") {
            defaultPort = "21"
        } else {
            return false
        }
        return spells(port, defaultPort)
    }

    /// Whether `bytes`, lower-cased, are `word` (lower-case ASCII).
    private static func spells(_ bytes: Span<UInt8>, _ word: StaticString) -> Bool {
        let text = word.description
        let word = text.utf8.span
        guard bytes.count == word.count else { return false }
        for index in word.indices where lowered(bytes[index]) != word[index] { return false }
        return true
    }

    private static func lastIndex(of byte: UInt8, in bytes: Span<UInt8>, from start: Int, to end: Int)
        -> Int?
    {
        var index = end
        while index > start {
            index -= 1
            if bytes[index] == byte { return index }
        }
        return nil
    }

    private static func isASCII(_ bytes: Span<UInt8>, from start: Int, to end: Int) -> Bool {
        var index = start
        while index < end {
            if bytes[index] >= 0x80 { return false }
            index += 1
        }
        return true
    }

    private static func firstSchemeSeparator(in bytes: Span<UInt8>) -> Int? {
        guard bytes.count >= 3 else { return nil }
        var index = 0
        while index < bytes.count - 2 {
            if bytes[index] == UInt8(ascii: ":"), bytes[index + 1] == UInt8(ascii: "/"),
                bytes[index + 2] == UInt8(ascii: "/")
            {
                return index
            }
            index += 1
        }
        return nil
    }

    private static func isScheme(_ bytes: Span<UInt8>, to end: Int) -> Bool {
        guard end > 0, isLetter(bytes[0]) else { return false }
        for index in 1..<end {
            let byte = bytes[index]
            guard
                isLetter(byte) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")) || byte == UInt8(ascii: "+")
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            else { return false }
        }
        return true
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) &- UInt8(ascii: "a") < 26 }

    private static func lowered(_ byte: UInt8) -> UInt8 { byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte }
}
