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

    /// The cookie a `Set-Cookie` value sets (before its attributes), and its attributes (`Path=/`,
    /// `HttpOnly`, …) as name and value, each without the spaces around it.
    static func cookie(inSetCookie value: String) -> (cookie: CookiePair, attributes: [CookiePair])? {
        var pieces = value.split(separator: ";", omittingEmptySubsequences: false)[...]
        guard let first = pieces.popFirst(), let cookie = cookiePair(first) else { return nil }
        return (cookie, pieces.compactMap(cookiePair))
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

    /// A `Set-Cookie` value with its cookie's value hidden, its name and attributes (`Path`,
    /// `Expires`, `HttpOnly`, …) kept.
    func redact(setCookie value: String) -> String {
        guard let end = value.firstIndex(of: ";") else { return hidingCookieValue(value[...]) }
        return hidingCookieValue(value[..<end]) + value[end...]
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
