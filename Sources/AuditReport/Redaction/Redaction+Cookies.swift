extension Redaction {
    /// One cookie of a `Cookie` header or a `Set-Cookie`: its name (nil for a pair without `=`,
    /// which is all value) and its value, without the spaces around them.
    struct CookiePair: Equatable {
        /// The cookie's name, or nil when the pair has no `=`.
        var name: Substring?
        /// The cookie's value.
        var value: Substring
    }

    /// The cookies of a `Cookie` header's value (`a=1; b=2`), empty pieces left out.
    static func cookies(inCookieHeader value: String) -> [CookiePair] {
        value.split(separator: ";").compactMap(cookiePair)
    }

    /// The cookies a `Set-Cookie` value sets, each with its attributes (`Path=/`, `HttpOnly`, …) as
    /// name and value, without the spaces around them: one, or several a sender joined with commas
    /// (as Foundation joins a response's repeated headers).
    static func cookies(inSetCookie value: String) -> [(cookie: CookiePair, attributes: [CookiePair])] {
        setCookieStrings(in: value).compactMap { one in
            var pieces = one.split(separator: ";", omittingEmptySubsequences: false)[...]
            guard let first = pieces.popFirst(), let cookie = cookiePair(first) else { return nil }
            return (cookie, pieces.compactMap(cookiePair))
        }
    }

    /// A `Set-Cookie` value cut where a comma starts another cookie (a name and `=` after it); a
    /// comma inside an attribute (`Expires=Wed, 21 Oct 2026 …`) cuts nothing.
    private static func setCookieStrings(in value: String) -> [Substring] {
        var strings: [Substring] = []
        var start = value.startIndex
        var searchFrom = value.startIndex
        while let comma = value[searchFrom...].firstIndex(of: ",") {
            let after = value.index(after: comma)
            if startsCookie(value[after...]) {
                strings.append(value[start..<comma])
                start = after
            }
            searchFrom = after
        }
        strings.append(value[start...])
        return strings
    }

    /// Whether `text` starts with a cookie's name and `=`, after spaces.
    private static func startsCookie(_ text: Substring) -> Bool {
        let text = text.drop { $0 == " " || $0 == "\t" }
        guard let equals = text.firstIndex(of: "=") else { return false }
        let name = text[..<equals]
        return !name.isEmpty && !name.contains { $0 == " " || $0 == "\t" || $0 == ";" || $0 == "," }
    }

    private static func cookiePair(_ piece: Substring) -> CookiePair? {
        let piece = piece.trimmingASCIISpaces()
        guard !piece.isEmpty else { return nil }
        guard let equals = piece.firstIndex(of: "=") else { return CookiePair(name: nil, value: piece) }
        return CookiePair(
            name: piece[..<equals].trimmingASCIISpaces(), value: piece[equals...].dropFirst().trimmingASCIISpaces())
    }

    /// A `Cookie` header's value with each cookie's value hidden and its name kept
    /// (`sid=[REDACTED-1f2e3d4c]; theme=[REDACTED-…]`), so a record still says which cookies went;
    /// a piece without `=` is hidden whole.
    func redact(cookieHeader value: String) -> String {
        value.split(separator: ";", omittingEmptySubsequences: false).map(hidingCookieValue).joined(separator: ";")
    }

    /// A `Set-Cookie` value with each cookie's value hidden, its name and attributes (`Path`,
    /// `Expires`, `HttpOnly`, …) kept; cookies joined with commas each get the same.
    func redact(setCookie value: String) -> String {
        Self.setCookieStrings(in: value).map { one in
            guard let end = one.firstIndex(of: ";") else { return hidingCookieValue(one) }
            return hidingCookieValue(one[..<end]) + one[end...]
        }.joined(separator: ",")
    }

    /// One `name=value` piece with its value hidden, the spaces around it kept.
    private func hidingCookieValue(_ piece: Substring) -> String {
        guard let pair = Self.cookiePair(piece) else { return String(piece) }
        let leading = piece.prefix { $0 == " " || $0 == "\t" }
        guard let name = pair.name else { return "\(leading)[\(hidden(pair.value))]" }
        guard !pair.value.isEmpty else { return String(piece) }
        return "\(leading)\(name)=[\(hidden(pair.value))]"
    }
}

extension Substring {
    /// This text without the spaces and tabs at either end.
    fileprivate func trimmingASCIISpaces() -> Substring {
        let isSpace = { (character: Character) in character == " " || character == "\t" }
        guard let start = firstIndex(where: { !isSpace($0) }) else { return self[endIndex...] }
        let end = lastIndex(where: { !isSpace($0) }) ?? start
        return self[start...end]
    }
}
