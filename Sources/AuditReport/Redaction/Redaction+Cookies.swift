extension Redaction {
    /// One cookie of a `Cookie` header or a `Set-Cookie`, as UTF-8 bytes: its name (nil for a piece
    /// without `=`, which is all value) and its value, without the spaces around them.
    struct CookiePair: Equatable {
        /// The cookie's name, or nil when the piece has no `=`.
        var name: ArraySlice<UInt8>?
        /// The cookie's value.
        var value: ArraySlice<UInt8>

        /// The name as text (empty for none).
        var nameText: String { String(decoding: name ?? [], as: UTF8.self) }
        /// The value as text.
        var valueText: String { String(decoding: value, as: UTF8.self) }
    }

    /// The cookies of a `Cookie` header's value (`a=1; b=2`), empty pieces left out.
    static func cookies(inCookieHeader value: String) -> [CookiePair] {
        Array(value.utf8).split(separator: semicolon).compactMap(cookiePair)
    }

    /// The cookies a `Set-Cookie` value sets, each with its attributes (`Path=/`, `HttpOnly`, …):
    /// one, or several a sender joined with commas (as Foundation joins a response's repeated
    /// headers).
    static func cookies(inSetCookie value: String) -> [(cookie: CookiePair, attributes: [CookiePair])] {
        let bytes = Array(value.utf8)
        return setCookieRanges(in: bytes).compactMap { range in
            var pieces = bytes[range].split(separator: semicolon, omittingEmptySubsequences: false)[...]
            guard let first = pieces.popFirst(), let cookie = cookiePair(first) else { return nil }
            return (cookie, pieces.compactMap(cookiePair))
        }
    }

    /// A `Cookie` header's value with each cookie's value hidden and its name kept
    /// (`sid=[REDACTED-1f2e3d4c]; theme=[REDACTED-…]`), so a record still says which cookies went;
    /// a piece without `=` is hidden whole.
    func redact(cookieHeader value: String) -> String {
        let bytes = Array(value.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + 64)
        appendHidingCookieValues(of: bytes[...], to: &output)
        return String(decoding: output, as: UTF8.self)
    }

    /// A `Set-Cookie` value with each cookie's value hidden, its name and attributes (`Path`,
    /// `Expires`, `HttpOnly`, …) kept; cookies joined with commas each get the same.
    func redact(setCookie value: String) -> String {
        let bytes = Array(value.utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + 32)
        for (index, range) in Self.setCookieRanges(in: bytes).enumerated() {
            if index > 0 { output.append(UInt8(ascii: ",")) }
            let cookie = bytes[range]
            let end = cookie.firstIndex(of: Self.semicolon) ?? cookie.endIndex
            appendHidingCookieValue(of: cookie[..<end], to: &output)
            output += cookie[end...]
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// Appends `pieces` (cookies separated by `;`) to `output`, each value hidden.
    private func appendHidingCookieValues(of pieces: ArraySlice<UInt8>, to output: inout [UInt8]) {
        var start = pieces.startIndex
        while true {
            let end = pieces[start...].firstIndex(of: Self.semicolon) ?? pieces.endIndex
            appendHidingCookieValue(of: pieces[start..<end], to: &output)
            guard end < pieces.endIndex else { return }
            output.append(Self.semicolon)
            start = end + 1
        }
    }

    /// Appends one `name=value` piece to `output` with its value hidden, its leading spaces kept.
    private func appendHidingCookieValue(of piece: ArraySlice<UInt8>, to output: inout [UInt8]) {
        guard let pair = Self.cookiePair(piece), !(pair.name != nil && pair.value.isEmpty) else {
            output += piece
            return
        }
        output += piece.prefix(while: Self.isSpace)
        if let name = pair.name {
            output += name
            output.append(UInt8(ascii: "="))
        }
        output.append(UInt8(ascii: "["))
        output += hidden(pair.value).utf8
        output.append(UInt8(ascii: "]"))
    }

    private static func cookiePair(_ piece: ArraySlice<UInt8>) -> CookiePair? {
        let piece = trimmingSpaces(piece)
        guard !piece.isEmpty else { return nil }
        guard let equals = piece.firstIndex(of: UInt8(ascii: "=")) else { return CookiePair(name: nil, value: piece) }
        return CookiePair(name: trimmingSpaces(piece[..<equals]), value: trimmingSpaces(piece[(equals + 1)...]))
    }

    /// The ranges of a `Set-Cookie` value's cookies: cut where a comma starts another cookie (a name
    /// and `=` after it); a comma inside an attribute (`Expires=Wed, 21 Oct 2026 …`) cuts nothing.
    private static func setCookieRanges(in bytes: [UInt8]) -> [Range<Int>] {
        var ranges: [Range<Int>] = []
        var start = 0
        for comma in bytes.indices where bytes[comma] == UInt8(ascii: ",") && startsCookie(bytes[(comma + 1)...]) {
            ranges.append(start..<comma)
            start = comma + 1
        }
        ranges.append(start..<bytes.count)
        return ranges
    }

    /// Whether `text` starts with a cookie's name and `=`, after spaces.
    private static func startsCookie(_ text: ArraySlice<UInt8>) -> Bool {
        let text = text.drop(while: isSpace)
        guard let equals = text.firstIndex(of: UInt8(ascii: "=")) else { return false }
        let name = text[..<equals]
        return !name.isEmpty
            && !name.contains { isSpace($0) || $0 == semicolon || $0 == UInt8(ascii: ",") }
    }

    private static let semicolon = UInt8(ascii: ";")

    private static func isSpace(_ byte: UInt8) -> Bool { byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") }

    private static func trimmingSpaces(_ bytes: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        guard let first = bytes.firstIndex(where: { !isSpace($0) }), let last = bytes.lastIndex(where: { !isSpace($0) })
        else { return bytes[bytes.endIndex...] }
        return bytes[first...last]
    }
}
