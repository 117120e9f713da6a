/// A kind of secret recognised by its shape, wherever it appears in a URL or header value.
public enum SecretShape: String, Sendable, Hashable, CaseIterable, Codable {
    /// A JSON Web Token: `eyJ…` `.` `eyJ…` `.` signature (base64url parts).
    case jwt
    /// A provider's key or token, known by its prefix: OpenAI and Anthropic `sk-…`, GitHub `ghp_…`
    /// and `github_pat_…`, GitLab `glpat-…`, Slack `xoxb-…`, AWS `AKIA…`/`ASIA…`, Google `AIza…` and
    /// `ya29.…`, Stripe `sk_live_…`, Hugging Face `hf_…`, npm `npm_…`, PyPI `pypi-…`, SendGrid
    /// `SG.…`, Shopify `shpat_…`, DigitalOcean `dop_v1_…`, and more.
    case providerKey
    /// An HTTP authentication scheme and its credentials in any header value: `Bearer …`,
    /// `Basic …`, `Token …`.
    case authScheme
    /// The secret path segments of webhook and bot URLs: the segments after `/hooks/`,
    /// `/webhooks/`, `/services/` (Slack), `/webhookb2/` (Teams), and Telegram's `/bot<id>:<token>/`.
    case webhookPath
    /// An OAuth authorization code: a `code=` of eight characters or more beside `state=`, or on a
    /// callback, sign-in or redirect path.
    case oauthCode
    /// A long random-looking value (mixed case and digits, high entropy) in a credential-like
    /// place: a query or fragment parameter, or a header, whose name says token, key, secret,
    /// auth, session, signature, password or credential.
    case highEntropy
}

/// Recognises secrets by their shape, on the UTF-8 bytes of a value; used by ``Redaction``.
enum SecretShapes {
    typealias Bytes = ArraySlice<UInt8>

    /// Prefixes of provider keys and tokens, each with the least number of characters that follow.
    static let providerPrefixes: [(prefix: String, minimumRest: Int)] = [
        ("sk-ant-", 20), ("sk-proj-", 20), ("sk-", 20), ("sk_live_", 16), ("sk_test_", 16), ("rk_live_", 16),
        ("rk_test_", 16), ("whsec_", 16), ("ghp_", 30), ("gho_", 30), ("ghu_", 30), ("ghs_", 30), ("ghr_", 30),
        ("github_pat_", 30), ("glpat-", 20), ("gldt-", 20), ("xoxb-", 20), ("xoxp-", 20), ("xoxa-", 20),
        ("xoxr-", 20), ("xoxs-", 20), ("xapp-", 20), ("AKIA", 16), ("ASIA", 16), ("AIza", 30), ("ya29.", 20),
        ("hf_", 30), ("npm_", 30), ("pypi-", 40), ("SG.", 40), ("shpat_", 20), ("shpss_", 20), ("shpca_", 20),
        ("dop_v1_", 40), ("doo_v1_", 40), ("sq0atp-", 20), ("sq0csp-", 20), ("lin_api_", 30), ("pat-na1-", 30),
        ("figd_", 30), ("glc_", 30), ("dapi", 32), ("AccountKey=", 40),
    ]

    /// Characters of tokens, keys and base64(url) text.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
            UInt8(ascii: "~"), UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="), UInt8(ascii: "%"):
            true
        default: false
        }
    }

    /// Whether `value` is a JWT: three base64url parts, the first two starting `eyJ`.
    static func isJWT(_ value: Bytes) -> Bool {
        guard value.count >= 30, value.starts(with: eyJ) else { return false }
        let parts = value.split(separator: UInt8(ascii: "."), omittingEmptySubsequences: false)
        guard parts.count == 3 || parts.count == 5, parts[1].starts(with: eyJ) else { return false }
        return parts.prefix(2).allSatisfy { $0.count >= 10 } && parts.allSatisfy { $0.allSatisfy(isBase64URLByte) }
    }

    private static let eyJ = Array("eyJ".utf8)

    private static func isBase64URLByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
            UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "="):
            true
        default: false
        }
    }

    /// Whether `value` is a provider key: a known prefix followed by enough token characters.
    static func isProviderKey(_ bytes: Bytes) -> Bool {
        guard bytes.count >= 20, let first = bytes.first, prefixFirstBytes.contains(first) else { return false }
        for (prefix, minimumRest) in providerPrefixBytes where bytes.starts(with: prefix) {
            let rest = bytes.dropFirst(prefix.count)
            return rest.count >= minimumRest && rest.allSatisfy(isTokenByte)
        }
        return false
    }

    private static let providerPrefixBytes = providerPrefixes.map { (Array($0.prefix.utf8), $0.minimumRest) }
    private static let prefixFirstBytes = Set(providerPrefixes.compactMap { $0.prefix.utf8.first })

    /// Whether `value` looks random: at least `minimumLength` token characters with upper case,
    /// lower case and digits, not hexadecimal or a UUID, and at least 3.7 bits of entropy a
    /// character (random base64 of that length has over 4).
    static func isHighEntropy(_ bytes: Bytes, minimumLength: Int) -> Bool {
        guard bytes.count >= minimumLength, bytes.count <= 4_096 else { return false }
        var hasUpper = false
        var hasLower = false
        var hasDigit = false
        var counts = [Int](repeating: 0, count: 128)
        for byte in bytes {
            guard isTokenByte(byte) else { return false }
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): hasUpper = true
            case UInt8(ascii: "a")...UInt8(ascii: "z"): hasLower = true
            case UInt8(ascii: "0")...UInt8(ascii: "9"): hasDigit = true
            default: break
            }
            counts[Int(byte)] += 1
        }
        guard hasUpper, hasLower, hasDigit else { return false }
        let total = Double(bytes.count)
        var entropy = 0.0
        for index in counts.indices where counts[index] > 0 {
            let p = Double(counts[index]) / total
            entropy -= p * log2(p)
        }
        return entropy >= 3.7 && !isHexOrUUID(bytes)
    }

    /// Whether `value` is a secret by a format that may appear anywhere: a JWT or a provider key.
    static func hasKnownFormat(_ value: Bytes, shapes: Set<SecretShape>) -> Bool {
        guard value.count >= 20 else { return false }
        return (shapes.contains(.jwt) && isJWT(value)) || (shapes.contains(.providerKey) && isProviderKey(value))
    }

    /// Words that make a parameter or header name credential-like.
    static let credentialWords = [
        "token", "secret", "passw", "apikey", "api_key", "api-key", "authkey", "auth_", "_auth", "auth-", "-auth",
        "signature", "session", "credential", "private_key", "access_key", "accesskey",
    ]

    /// Whether a parameter or header name (lower-cased) names a credential.
    static func isCredentialName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        return ["key", "sig", "sid", "pwd", "auth", "authorization"].contains(name)
            || credentialWordBytes.contains { word in
                word.count <= bytes.count
                    && (0...(bytes.count - word.count)).contains { bytes[$0..<($0 + word.count)].elementsEqual(word) }
            }
    }

    private static let credentialWordBytes = credentialWords.map { Array($0.utf8) }

    /// Path segments after which webhook and bot URLs carry their secret (lower-cased).
    static let webhookMarkers: Set<String> = ["hooks", "webhooks", "webhook", "services", "webhookb2", "triggers"]

    /// Whether `segment` is one of ``webhookMarkers``, compared without case.
    ///
    /// Every URL's path segments are asked, so an ASCII segment is compared byte by byte with no
    /// string made; only one with other bytes is lower-cased as a string (Unicode case mapping can
    /// make ASCII of them, as U+212A KELVIN SIGN makes `k`).
    static func isWebhookMarker(_ segment: Bytes) -> Bool {
        guard segment.count >= 5, segment.count <= 9 else { return false }
        guard segment.allSatisfy({ $0 < 0x80 }) else {
            return webhookMarkers.contains(String(decoding: segment, as: UTF8.self).lowercased())
        }
        return webhookMarkerBytes.contains { marker in
            marker.count == segment.count
                && zip(marker, segment).allSatisfy { expected, byte in
                    byte == expected || (byte &- UInt8(ascii: "A") < 26 && byte | 0x20 == expected)
                }
        }
    }

    private static let webhookMarkerBytes = webhookMarkers.map { Array($0.utf8) }

    /// Whether a path segment after a webhook marker is its secret: at least 20 token characters
    /// with letters and digits, no `.` (a file name), and not a UUID or plain hex (ids, not secrets).
    static func isWebhookSecret(_ bytes: Bytes) -> Bool {
        guard bytes.count >= 20, bytes.count <= 128, !bytes.contains(UInt8(ascii: ".")), bytes.allSatisfy(isTokenByte),
            !isHexOrUUID(bytes)
        else { return false }
        let hasLetter = bytes.contains { ($0 | 0x20) >= UInt8(ascii: "a") && ($0 | 0x20) <= UInt8(ascii: "z") }
        let hasDigit = bytes.contains { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
        return hasLetter && hasDigit
    }

    /// Whether `text` is hexadecimal digits, possibly in UUID groups.
    static func isHexOrUUID(_ bytes: Bytes) -> Bool {
        bytes.allSatisfy { byte in
            byte == UInt8(ascii: "-") || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
                || ((byte | 0x20) >= UInt8(ascii: "a") && (byte | 0x20) <= UInt8(ascii: "f"))
        }
    }

    /// Whether a path segment is a Telegram bot token: `bot<digits>:<token>`.
    static func isBotToken(_ segment: Bytes) -> Bool {
        guard segment.count >= 36, segment.starts(with: "bot".utf8),
            let colon = segment.firstIndex(of: UInt8(ascii: ":"))
        else { return false }
        let id = segment[(segment.startIndex + 3)..<colon]
        let token = segment[(colon + 1)...]
        return id.count >= 5 && id.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
            && token.count >= 30 && token.allSatisfy(isTokenByte)
    }
}

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif
