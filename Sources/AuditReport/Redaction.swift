import AuditPolicy
import Foundation

/// Which secrets are removed from events, logs and reports, and how.
///
/// Header values of the listed headers become `[REDACTED]`; values of the listed query parameters
/// become `REDACTED`; a password in the URL's user info becomes `REDACTED`. Names compare
/// case-insensitively. Policies still see the real request: redaction applies only to what is
/// published or written.
public struct Redaction: Sendable, Hashable {
    /// Header names whose values are hidden (lower-cased).
    public var headers: Set<String>
    /// Query parameter names whose values are hidden (lower-cased).
    public var queryParameters: Set<String>

    /// Creates a redaction list; names are lower-cased.
    public init(headers: Set<String>, queryParameters: Set<String>) {
        self.headers = Set(headers.map { $0.lowercased() })
        self.queryParameters = Set(queryParameters.map { $0.lowercased() })
    }

    /// Authorization, Cookie, Set-Cookie, Proxy-Authorization and common API-key headers; token,
    /// password, key, secret and signature query parameters.
    public static let `default` = Redaction(
        headers: ["authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "x-auth-token"],
        queryParameters: [
            "token", "access_token", "refresh_token", "id_token", "auth", "password", "passwd", "pwd", "key",
            "api_key", "apikey", "secret", "client_secret", "signature", "sig",
        ]
    )

    static let hiddenHeaderValue = "[REDACTED]"
    static let hiddenValue = "REDACTED"

    /// `headers` with secret values hidden.
    public func redact(headers: [RequestSnapshot.Header]) -> [RequestSnapshot.Header] {
        headers.map { header in
            self.headers.contains(header.name.lowercased())
                ? RequestSnapshot.Header(name: header.name, value: Self.hiddenHeaderValue) : header
        }
    }

    /// `url` with the user-info password and secret query values hidden; everything else as sent.
    public func redact(url: String) -> String {
        // Without `@` there is no user info, and without `?` no query: nothing to hide (the common
        // case, checked without the string searches below).
        guard url.utf8.contains(where: { $0 == UInt8(ascii: "@") || $0 == UInt8(ascii: "?") }) else { return url }
        var text = url
        if let schemeEnd = text.range(of: "://") {
            let authorityEnd = text[schemeEnd.upperBound...].firstIndex { "/?#".contains($0) } ?? text.endIndex
            let authority = text[schemeEnd.upperBound..<authorityEnd]
            // User info is credentials (`user:password@`, or a token alone as `token@`): all of it goes.
            if let at = authority.lastIndex(of: "@") {
                text.replaceSubrange(authority.startIndex..<at, with: Self.hiddenValue)
            }
        }
        guard let questionMark = text.firstIndex(of: "?") else { return text }
        let queryEnd = text[questionMark...].firstIndex(of: "#") ?? text.endIndex
        let query = text[text.index(after: questionMark)..<queryEnd]
        let redacted = query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            guard let equals = pair.firstIndex(of: "=") else { return String(pair) }
            let name = pair[..<equals]
            let decoded = (name.removingPercentEncoding ?? String(name)).lowercased()
            return queryParameters.contains(decoded) ? "\(name)=\(Self.hiddenValue)" : String(pair)
        }.joined(separator: "&")
        text.replaceSubrange(text.index(after: questionMark)..<queryEnd, with: redacted)
        return text
    }
}

extension Redaction {
    /// `text` with every `http://` or `https://` URL in it redacted as by ``redact(url:)``; a URL
    /// ends at whitespace, a quote, `)`, `>` or the end of the text.
    public func redact(text: String) -> String {
        var output = ""
        var rest = text[...]
        while let start = rest.range(of: "http://") ?? rest.range(of: "https://") {
            let httpStart = rest.range(of: "http://")?.lowerBound ?? rest.endIndex
            let httpsStart = rest.range(of: "https://")?.lowerBound ?? rest.endIndex
            let urlStart = min(httpStart, httpsStart, start.lowerBound)
            output += rest[..<urlStart]
            let urlEnd = rest[urlStart...].firstIndex { $0.isWhitespace || "\"')>".contains($0) } ?? rest.endIndex
            output += redact(url: String(rest[urlStart..<urlEnd]))
            rest = rest[urlEnd...]
        }
        return output + rest
    }

    /// The snapshot of `request` that events, logs and reports keep: URL and headers redacted.
    public func snapshot(of request: AuditRequest, bodyBytes: Int?) -> RequestSnapshot {
        RequestSnapshot(
            method: request.method, url: redact(url: request.url), host: request.host,
            headers: redact(headers: request.headers.map { RequestSnapshot.Header(name: $0.name, value: $0.value) }),
            bodyBytes: bodyBytes
        )
    }
}
