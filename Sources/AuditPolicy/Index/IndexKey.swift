/// Something a subject must contain for a rule to match, stated in terms of the subject's tokens.
///
/// A *token* is a maximal run of ASCII letters and digits in the subject, letters lower-cased.
/// Every other byte (punctuation, control characters, any byte of a non-ASCII character) separates
/// tokens. `https://Ads.Example.com/x_1` has the tokens `https`, `ads`, `example`, `com`, `x`, `1`.
struct IndexKey: Hashable, Sendable, CustomStringConvertible {
    /// How the key's text relates to a token of the subject.
    enum Kind: UInt8, Sendable, CaseIterable {
        /// The text is a whole token.
        case token
        /// The text is how some token starts (at most ``IndexKey/maximumAffixLength`` bytes).
        case tokenPrefix
        /// The text is how some token ends (at most ``IndexKey/maximumAffixLength`` bytes).
        case tokenSuffix
        /// The text occurs inside some token (at most ``IndexKey/maximumInfixLength`` bytes).
        case infix
        /// The text is two whole tokens joined by a `.`: the subject has the first token, and the
        /// very next token is the second (whatever separates them).
        case tokenPair
    }

    /// Prefix and suffix keys keep at most this many bytes of their text.
    static let maximumAffixLength = 8
    /// Infix keys keep at most this many bytes of their text.
    static let maximumInfixLength = 5

    let kind: Kind
    /// Lower-case ASCII letters and digits.
    let text: [UInt8]
    /// Whether every match has the key (a whole token or a pair) in the URL's authority, between
    /// `scheme:/` and the first `/`, `?` or `#` (`ads` in `||ads.example.com^`): only the tokens
    /// there are looked up for it.
    let isInAuthority: Bool
    /// For a whole token found in a literal run: the byte the run has just before it and just
    /// after it (0: none), which every match has around that token (`_` and `-` around `160x600`
    /// in `_160x600-`). Not part of the key's identity: rules with the same token share a key,
    /// and each of its postings checks its own bytes (see ``KeyTable``).
    let before: UInt8
    let after: UInt8

    init(kind: Kind, text: [UInt8], isInAuthority: Bool = false, before: UInt8 = 0, after: UInt8 = 0) {
        self.kind = kind
        self.text = text
        self.isInAuthority = isInAuthority
        self.before = before
        self.after = after
    }

    static func == (lhs: IndexKey, rhs: IndexKey) -> Bool {
        lhs.kind == rhs.kind && lhs.text == rhs.text && lhs.isInAuthority == rhs.isInAuthority
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(text)
        hasher.combine(isInAuthority)
    }

    var description: String {
        let text = String(decoding: text, as: UTF8.self)
        switch kind {
        case .token, .tokenPair: return isInAuthority ? "host:" + text : text
        case .tokenPrefix: return text + "…"
        case .tokenSuffix: return "…" + text
        case .infix: return "…" + text + "…"
        }
    }

    /// How often the key is expected to be found in a request: lower is better. Whole tokens beat
    /// affixes, which beat infixes; longer beats shorter; tokens that almost every URL carries
    /// are nearly worthless.
    var cost: Double {
        if kind == .tokenPair {
            // Two tokens next to each other: rarer than either, but seldom independent; and a pair
            // is never priced below a plain three-character token, so that pairs only take the
            // rules of tokens that are common or shared by many rules (IP addresses' octets).
            let (first, second) = pairTokens
            return min(1, max(0.05, 2 * first.cost * second.cost))
        }
        let kindFactor: Double
        switch kind {
        case .token: kindFactor = 1
        case .tokenPrefix, .tokenSuffix: kindFactor = 3
        case .infix: kindFactor = 12
        case .tokenPair: kindFactor = 1
        }
        let byLength: [Double] = [1, 0.5, 0.3, 0.05, 0.02, 0.008, 0.004, 0.002]
        let estimate = min(1, kindFactor * byLength[min(text.count, byLength.count - 1)])
        if Self.isPartOfCommonToken(self) { return max(0.9, estimate) }
        if kind == .token, Self.frequentTokens.contains(text) { return max(0.1, estimate) }
        return estimate
    }

    /// Whether every request that carries a common token also carries this key.
    private static func isPartOfCommonToken(_ key: IndexKey) -> Bool {
        switch key.kind {
        case .token: commonTokens.contains(key.text)
        case .tokenPrefix: commonTokens.contains { $0.starts(with: key.text) }
        case .tokenSuffix: commonTokens.contains { $0.reversed().starts(with: key.text.reversed()) }
        case .tokenPair: false
        case .infix:
            commonTokens.contains { token in
                token.count >= key.text.count
                    && (0...(token.count - key.text.count)).contains {
                        token[$0..<$0 + key.text.count].elementsEqual(key.text)
                    }
            }
        }
    }

    /// Tokens found in a large share of all URLs.
    static let commonTokens: Set<[UInt8]> = Set(
        [
            "http", "https", "www", "com", "net", "org", "html", "htm", "php", "js", "css", "png", "jpg", "gif",
            "json", "api", "cdn", "static", "img", "images", "assets", "v1", "v2", "en", "us", "uk", "de", "io",
            "index", "id", "ref", "utm", "source", "amp", "min", "co", "www2", "s", "a", "b", "c", "i", "t",
        ].map { Array($0.utf8) })

    /// Words found in many URLs, though not in most: the web's everyday vocabulary and its largest
    /// sites. A rule is better filed under a rarer token of its own, or under a pair.
    static let frequentTokens: Set<[UInt8]> = Set(
        [
            "about", "account", "ad", "ads", "analytics", "app", "apps", "article", "articles", "auth", "beacon",
            "blog", "cache", "category", "click", "cloud", "collect", "common", "config", "connect", "content",
            "count", "counter", "data", "default", "download", "email", "embed", "event", "events", "file", "files",
            "font", "fonts", "global", "help", "home", "icon", "icons", "image", "info", "lib", "live", "log", "login",
            "mail", "main", "media", "metrics", "mobile", "news", "online", "page", "pages", "photo", "photos",
            "pixel", "player", "plugins", "post", "product", "products", "public", "resources", "script", "scripts",
            "search", "secure", "service", "services", "share", "shop", "site", "sites", "sport", "sports", "store",
            "stats", "style", "target", "tag", "tags", "themes", "track", "tracking", "update", "upload", "uploads",
            "user", "users", "video", "videos", "view", "watch", "web", "widget", "widgets", "wp",
            "akamai", "akamaihd", "akamaized", "amazon", "amazonaws", "apple", "bing", "cloudflare", "cloudfront",
            "doubleclick", "facebook", "fbcdn", "google", "googleapis", "googlesyndication", "googletagmanager",
            "googleusercontent", "gstatic", "instagram", "jquery", "linkedin", "microsoft", "twitter", "wordpress",
            "yahoo", "youtube", "ytimg",
        ].map { Array($0.utf8) })

    /// A hash of kind and text that is never zero (zero marks an empty slot of ``KeyTable``).
    ///
    /// The kind enters only at the end, so a scan can hash a token once and read off the hash of
    /// every prefix on the way.
    static func hash<Bytes: Collection<UInt8>>(kind: Kind, text: Bytes) -> UInt64 {
        var state = hashStart
        for byte in text { state = hashStep(state, byte) }
        return hashFinish(state, kind)
    }

    static let hashStart: UInt64 = 0xcbf2_9ce4_8422_2325

    @inline(__always) static func hashStep(_ state: UInt64, _ byte: UInt8) -> UInt64 {
        (state ^ UInt64(byte)) &* 0x0000_0100_0000_01B3
    }

    @inline(__always) static func hashFinish(_ state: UInt64, _ kind: Kind) -> UInt64 {
        let keyed = state ^ (UInt64(kind.rawValue) &* 0x9e37_79b9_7f4a_7c15)
        let mixed = (keyed ^ (keyed >> 29)) &* 0xbf58_476d_1ce4_e5b9
        let hash = mixed ^ (mixed >> 32)
        return hash == 0 ? 1 : hash
    }

    /// The key's hash. A whole-token key uses ``tokenHash(_:_:_:)``, which reads eight bytes at a
    /// time; a suffix key hashes its text last byte first, so a scan can hash a token backwards once
    /// and read off the hash of every suffix on the way.
    var hashValue64: UInt64 {
        switch kind {
        case .token: Self.tokenHash(text.span, 0, text.count)
        case .tokenSuffix: Self.hash(kind: kind, text: text.reversed())
        case .tokenPrefix, .infix: Self.hash(kind: kind, text: text)
        case .tokenPair:
            Self.pairHash(pairTokens.0.hashValue64, pairTokens.1.hashValue64)
        }
    }

    /// A pair key's two whole-token keys.
    var pairTokens: (IndexKey, IndexKey) {
        let dot = text.firstIndex(of: UInt8(ascii: ".")) ?? text.count
        return (
            IndexKey(kind: .token, text: Array(text[..<dot])),
            IndexKey(kind: .token, text: Array(text[min(dot + 1, text.count)...]))
        )
    }

    /// The key of two whole tokens next to each other.
    static func pair(_ first: [UInt8], _ second: [UInt8], isInAuthority: Bool = false) -> IndexKey {
        IndexKey(kind: .tokenPair, text: first + [UInt8(ascii: ".")] + second, isInAuthority: isInAuthority)
    }

    /// The hash of a pair key from its tokens' hashes (see ``tokenHash(_:_:_:)``): a subject's
    /// scan combines the hashes of each two neighbouring tokens it has already computed.
    @inline(__always)
    static func pairHash(_ first: UInt64, _ second: UInt64) -> UInt64 {
        let mixed = (first &* 0x9e37_79b9_7f4a_7c15 ^ second) &* 0xbf58_476d_1ce4_e5b9
        let hash = mixed ^ (mixed >> 31)
        return hash == 0 ? 1 : hash
    }

    /// The hash of the token `bytes[start..<end]` (not empty), lower-cased: every byte of a token
    /// is an ASCII letter or digit, and setting bit 5 lower-cases a letter and leaves a digit as it
    /// is, so eight bytes are lower-cased and mixed in at once. The last one to eight bytes are
    /// read with one load too, of the eight bytes that end where the token does, shifted down past
    /// the bytes before the rest. The length is not mixed in: a token holds no zero byte, so its
    /// words say where it ends.
    ///
    /// Each word is mixed in by one folded multiply (the two halves of a 128-bit product, XORed),
    /// whose every output bit depends on every input bit: one instruction does the work of a
    /// multiply-shift-multiply finisher. A token's first word never equals the seed (the seed's
    /// lowest byte has bit 5 clear, a token's first byte has it set), so no token of up to eight
    /// bytes multiplies zero.
    @inline(__always)
    static func tokenHash(_ bytes: Span<UInt8>, _ start: Int, _ end: Int) -> UInt64 {
        // Wrapping and masking arithmetic throughout: the checks Swift would add for overflow and
        // for shifts of 64 bits or more cost a third of the time of hashing a token. The loads
        // are checked against the span's bounds.
        let lowerCaseBits: UInt64 = 0x2020_2020_2020_2020
        var state = tokenSeed
        var offset = start
        while end &- offset > 8 {
            let word = bytes.word64(at: offset) | lowerCaseBits
            state = foldedMultiply(state ^ word, 0xbf58_476d_1ce4_e5b9)
            offset &+= 8
        }
        let rest = end &- offset
        var word: UInt64 = 0
        if end >= 8 {
            word = (bytes.word64(at: end &- 8) | lowerCaseBits) &>> UInt64(truncatingIfNeeded: (8 &- rest) &* 8)
        } else {
            for index in 0..<rest { word |= UInt64(bytes[offset &+ index] | 0x20) &<< UInt64(8 &* index) }
        }
        let hash = foldedMultiply(state ^ word, 0x9e37_79b9_7f4a_7c15)
        return hash == 0 ? 1 : hash
    }

    /// Where a token's hash starts: its lowest byte, 0x15, has bit 5 clear (see ``tokenHash(_:_:_:)``).
    private static let tokenSeed: UInt64 = 0x94d0_49bb_1331_1115

    /// The high and low halves of the 128-bit product of `a` and `b`, XORed.
    @inline(__always)
    static func foldedMultiply(_ a: UInt64, _ b: UInt64) -> UInt64 {
        let (high, low) = a.multipliedFullWidth(by: b)
        return high ^ low
    }
}

/// What a pattern needs, as a formula over keys: one key, or any one of several requirements.
indirect enum Requirement: Equatable, Sendable {
    /// The subject contains this key.
    case key(IndexKey)
    /// The subject meets at least one of these requirements.
    case anyOf([Requirement])

    /// The expected share of requests that meet the requirement (lower is better).
    var cost: Double {
        switch self {
        case .key(let key): key.cost
        case .anyOf(let requirements): min(1, requirements.reduce(0) { $0 + $1.cost })
        }
    }

    /// Every key the formula mentions.
    var keys: [IndexKey] {
        switch self {
        case .key(let key): [key]
        case .anyOf(let requirements): requirements.flatMap(\.keys)
        }
    }
}
