import AuditLocking
import AuditPolicy
import Foundation

/// Which secrets are removed from events, logs, reports and error descriptions, and how.
///
/// Secrets are found by name and by shape:
/// - **by name**: values of the listed headers and query (or fragment) parameters, and the URL's
///   user info;
/// - **by shape** (``SecretShape``): JWTs and provider keys anywhere in a URL or header value (path
///   segments, query values of any name, fragments); `Bearer`/`Basic` credentials in any header;
///   the secret segments of webhook and bot URLs; OAuth authorization codes; and long random
///   values in credential-like places.
///
/// A hidden value becomes `REDACTED-` (in a URL) or `[REDACTED-…]` (a header) followed by a
/// fingerprint: eight hex digits of an HMAC-SHA-256 of the value under ``fingerprintKey``, so one
/// secret can be followed across records without being shown. Policies still see the real
/// request: redaction applies only to what is published or written.
public struct Redaction: Sendable, Hashable {
    /// Header names whose values are hidden (lower-cased).
    public var headers: Set<String>
    /// Query and fragment parameter names whose values are hidden (lower-cased).
    public var queryParameters: Set<String>
    /// The shapes recognised wherever they appear; remove one to turn its detector off.
    public var shapes: Set<SecretShape> = Set(SecretShape.allCases)
    /// The key of the fingerprints. By default a random key per process: fingerprints match within
    /// one run's records. Set one (say, from a key file) to follow a secret across runs.
    public var fingerprintKey: [UInt8] = Redaction.processKey {
        didSet { fingerprinter = SHA256.HMACKey(fingerprintKey) }
    }
    /// ``fingerprintKey`` made ready for hashing.
    private var fingerprinter = Redaction.processFingerprinter

    /// Creates a redaction list; names are lower-cased. Every ``SecretShape`` is recognised.
    public init(headers: Set<String>, queryParameters: Set<String>) {
        self.headers = Set(headers.map { $0.lowercased() })
        self.queryParameters = Set(queryParameters.map { $0.lowercased() })
    }

    /// Provider authentication headers and cookies; token, password, key, secret, signature,
    /// session and cloud-signature query parameters; every shape.
    public static let `default` = Redaction(
        headers: [
            "authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key", "apikey",
            "x-auth-token", "x-access-token", "x-refresh-token", "x-session-token", "x-api-token", "x-token",
            "x-goog-api-key", "x-goog-iam-authorization-token", "x-amz-security-token", "private-token",
            "x-gitlab-token", "x-github-token", "x-shopify-access-token", "x-figma-token", "x-vault-token",
            "x-consul-token", "x-nomad-token", "dd-api-key", "dd-application-key", "x-honeycomb-team",
            "x-algolia-api-key", "x-postmark-server-token", "x-functions-key", "ocp-apim-subscription-key",
            "x-rapidapi-key", "x-auth-key", "cf-access-client-secret", "x-client-secret", "x-csrf-token",
            "x-xsrf-token", "x-hub-signature", "x-hub-signature-256", "x-slack-signature", "x-twilio-signature",
            "x-ms-token-aad-access-token", "x-supabase-api-key", "x-pinecone-api-key", "x-stainless-api-key",
        ],
        queryParameters: [
            "token", "access_token", "refresh_token", "id_token", "auth", "password", "passwd", "pwd", "api_key",
            "apikey", "secret", "client_secret", "signature", "sig", "x-amz-signature",
            "x-amz-credential", "x-amz-security-token", "x-goog-signature", "x-goog-credential", "awsaccesskeyid",
            "sessionid", "session_id", "jsessionid", "phpsessid", "aspsessionid", "sessid", "session_token",
            "auth_token", "code_verifier", "assertion", "client_assertion", "private_key",
        ]
    )

    /// The fingerprint key of this process (see ``fingerprintKey``).
    static let processKey: [UInt8] = (0..<32).map { _ in UInt8.random(in: 0...255) }
    private static let processFingerprinter = SHA256.HMACKey(processKey)

    static let hiddenValue = "REDACTED"

    /// `REDACTED-` and the fingerprint of `secret`.
    func hidden(_ secret: some StringProtocol) -> String {
        hidden(Array(secret.utf8)[...])
    }

    /// `REDACTED-` and the fingerprint of the UTF-8 bytes `secret`. A value hidden already (by any
    /// key: `REDACTED-` and eight hex digits, bare or in brackets) stays as it is, so a logged
    /// request redacted again (`audit replay` of a log) keeps the fingerprints it was logged with.
    func hidden(_ secret: ArraySlice<UInt8>) -> String {
        if let hiddenAlready = Self.hiddenForm(secret) { return hiddenAlready }
        return "\(Self.hiddenValue)-\(fingerprint(bytes: secret))"
    }

    /// `value` without its brackets when it is a hidden form, `REDACTED-` and eight lower-case hex
    /// digits.
    private static func hiddenForm(_ value: ArraySlice<UInt8>) -> String? {
        var form = value
        if form.first == UInt8(ascii: "["), form.last == UInt8(ascii: "]") { form = form.dropFirst().dropLast() }
        let prefix = "\(hiddenValue)-".utf8
        guard form.count == prefix.count + 8, form.starts(with: prefix),
            form.suffix(8).allSatisfy(isFingerprintDigit)
        else { return nil }
        return String(decoding: form, as: UTF8.self)
    }

    /// Eight hex digits of the keyed hash of `secret`: the fingerprint a hidden value shows.
    public func fingerprint(_ secret: some StringProtocol) -> String {
        fingerprint(bytes: Array(secret.utf8)[...])
    }

    /// The fingerprint of the UTF-8 bytes `secret`, noted as hidden while the values hidden are
    /// collected (``collectingHidden(_:)``).
    private func fingerprint(bytes secret: ArraySlice<UInt8>) -> String {
        _ = Self.hiddenValues?.values.withLock { $0.insert(String(decoding: secret, as: UTF8.self)) }
        return fingerprinter.code(for: secret).prefix(4).hexString
    }

    /// Where ``collectingHidden(_:)`` collects the values hidden, while it runs.
    @TaskLocal private static var hiddenValues: HiddenValues?

    private final class HiddenValues: Sendable {
        let values = Locked<Set<String>>([])
    }

    /// Runs `body`, collecting every value a redaction hides while it runs (on this task or
    /// thread): what a recording then hides wherever else it appears (``hidingEchoes(of:in:)``).
    static func collectingHidden<Result>(_ body: () -> Result) -> (Result, Set<String>) {
        let collected = HiddenValues()
        let result = $hiddenValues.withValue(collected, operation: body)
        return (result, collected.values.withLock { $0 })
    }

    /// `headers` with secret values hidden.
    public func redact(headers: [RequestSnapshot.Header]) -> [RequestSnapshot.Header] {
        headers.map { header in
            RequestSnapshot.Header(name: header.name, value: redact(headerValue: header.value, name: header.name))
        }
    }

    /// A header's value with its secrets hidden: all of it for a listed name (an authentication
    /// scheme word kept; a listed `Cookie` or `Set-Cookie` keeps its cookies' names and attributes),
    /// else every credential, JWT or provider key in it.
    public func redact(headerValue value: String, name: String) -> String {
        let lowerName = name.lowercased()
        if headers.contains(lowerName) {
            if lowerName == "cookie" { return redact(cookieHeader: value) }
            if lowerName == "set-cookie" { return redact(setCookie: value) }
            if let scheme = Self.authScheme(of: value) {
                return "\(scheme) [\(hidden(value.dropFirst(scheme.count + 1)))]"
            }
            return "[\(hidden(value))]"
        }
        if shapes.contains(.authScheme), let scheme = Self.authScheme(of: value) {
            return "\(scheme) [\(hidden(value.dropFirst(scheme.count + 1)))]"
        }
        if shapes.contains(.highEntropy), SecretShapes.isHighEntropy(Array(value.utf8)[...], minimumLength: 16),
            SecretShapes.isCredentialName(lowerName)
        {
            return "[\(hidden(value))]"
        }
        guard value.utf8.count >= 20, shapes.contains(.jwt) || shapes.contains(.providerKey) else { return value }
        return replacingTokens(in: value) { SecretShapes.hasKnownFormat(Array($0.utf8)[...], shapes: shapes) }
    }

    /// The authentication schemes whose word is kept before a hidden credential.
    private static let authSchemes = [
        "Bearer", "Basic", "Token", "Digest", "Negotiate", "AWS4-HMAC-SHA256", "HOBA", "Mutual",
    ]

    /// The authentication scheme a credential value starts with (`Bearer`, `Basic`, …, as written),
    /// if any: the scheme's word in any ASCII case (RFC 9110 §11.1), a space, and more after it.
    static func authScheme(of value: String) -> String? {
        let utf8 = value.utf8
        guard let space = utf8.firstIndex(of: UInt8(ascii: " ")), utf8.index(after: space) != utf8.endIndex else {
            return nil
        }
        let word = utf8[..<space]
        return authSchemes.contains { word.equalsIgnoringASCIICase($0.utf8) } ? String(value[..<space]) : nil
    }

    /// `text` with each word (a run of letters, digits, `-`, `_`, `.` and `~`) that `isSecret`
    /// accepts replaced by its hidden form.
    private func replacingTokens(in text: String, where isSecret: (Substring) -> Bool) -> String {
        var output = ""
        var changed = false
        var start = text.startIndex
        for index in text.indices where !Self.isWordCharacter(text[index]) {
            let word = text[start..<index]
            if !word.isEmpty, isSecret(word) {
                output += hidden(word)
                changed = true
            } else {
                output += word
            }
            output.append(text[index])
            start = text.index(after: index)
        }
        let last = text[start...]
        if !last.isEmpty, isSecret(last) {
            output += hidden(last)
            changed = true
        } else {
            output += last
        }
        return changed ? output : text
    }

    private static func isWordCharacter(_ character: Character) -> Bool {
        guard let ascii = character.asciiValue else { return false }
        return ascii != UInt8(ascii: "/") && ascii != UInt8(ascii: "=") && ascii != UInt8(ascii: "+")
            && ascii != UInt8(ascii: "%") && SecretShapes.isTokenByte(ascii)
    }
}
