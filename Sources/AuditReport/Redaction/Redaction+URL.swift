import AuditPolicy
import Foundation

extension Redaction {
    /// `url` with its secrets hidden (see ``Redaction``); everything else as sent.
    ///
    /// One pass over the URL's bytes finds the spans to hide; a URL with none (nearly all of them)
    /// comes back as it is.
    public func redact(url: String) -> String {
        let bytes = Array(url.utf8)
        let spans = secretSpans(in: bytes)
        return spans.isEmpty ? url : String(decoding: hiding(spans, of: bytes), as: UTF8.self)
    }

    /// A form body (`application/x-www-form-urlencoded`) with its secrets hidden as a URL's query
    /// parameters are (`password=…`, `client_secret=…`, a token exchange's `code=…`, values of a
    /// secret's shape); everything else as sent.
    public func redact(formBody body: String) -> String {
        let bytes = Array(body.utf8)
        var spans: [Range<Int>] = []
        // A form may be a token exchange (`grant_type=authorization_code&code=…`): its code is a secret.
        findInParameters(bytes, bytes.indices, separator: UInt8(ascii: "&"), into: &spans) { true }
        return spans.isEmpty ? body : String(decoding: hiding(spans, of: bytes), as: UTF8.self)
    }

    /// `bytes` with each of `spans` (in order) hidden.
    func hiding(_ spans: [Range<Int>], of bytes: [UInt8]) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count + 16 * spans.count)
        var position = 0
        for span in spans {
            output += bytes[position..<span.lowerBound]
            output += hidden(bytes[span]).utf8
            position = span.upperBound
        }
        output += bytes[position...]
        return output
    }

    typealias Bytes = ArraySlice<UInt8>

    /// The byte ranges of `url` that hold secrets, in order.
    private func secretSpans(in bytes: [UInt8]) -> [Range<Int>] {
        var spans: [Range<Int>] = []
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")) else { return [] }
        var index = colon + 1
        // Authority: user info is credentials (`user:password@`, or a token alone as `token@`).
        if bytes[index...].starts(with: [UInt8(ascii: "/"), UInt8(ascii: "/")]) {
            index += 2
            let authorityEnd = bytes[index...].firstIndex(where: Self.endsAuthority) ?? bytes.endIndex
            if let at = bytes[index..<authorityEnd].lastIndex(of: UInt8(ascii: "@")), at > index {
                spans.append(index..<at)
            }
            index = authorityEnd
        }
        let fragmentStart = bytes[index...].firstIndex(of: UInt8(ascii: "#")) ?? bytes.endIndex
        let queryStart = bytes[index..<fragmentStart].firstIndex(of: UInt8(ascii: "?")) ?? fragmentStart
        let path = index..<queryStart
        findInPath(bytes, path, into: &spans)
        if queryStart < fragmentStart {
            let query = (queryStart + 1)..<fragmentStart
            findInParameters(bytes, query, separator: UInt8(ascii: "&"), into: &spans) {
                Self.isOAuthContext(bytes, path: path, query: query)
            }
        }
        if fragmentStart < bytes.endIndex {
            let fragment = (fragmentStart + 1)..<bytes.endIndex
            if bytes[fragment].contains(UInt8(ascii: "=")) {
                findInParameters(bytes, fragment, separator: UInt8(ascii: "&"), into: &spans) { true }
            } else if SecretShapes.hasKnownFormat(bytes[fragment], shapes: shapes) {
                spans.append(fragment)
            }
        }
        return spans
    }

    private static func endsAuthority(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#")
    }

    /// Path segments that are secrets: known formats, webhook and bot secrets, and listed
    /// `;name=value` parameters. Segments shorter than any secret are passed over at once.
    private func findInPath(_ bytes: [UInt8], _ path: Range<Int>, into spans: inout [Range<Int>]) {
        var segmentStart = path.lowerBound
        var afterMarker = 0  // segments still in reach of a webhook marker
        while segmentStart <= path.upperBound {
            let end = bytes[segmentStart..<path.upperBound].firstIndex(of: UInt8(ascii: "/")) ?? path.upperBound
            let segment = bytes[segmentStart..<end]
            if let semicolon = segment.firstIndex(of: UInt8(ascii: ";")) {
                findInParameters(bytes, (semicolon + 1)..<end, separator: UInt8(ascii: ";"), into: &spans) { false }
                if SecretShapes.hasKnownFormat(bytes[segmentStart..<semicolon], shapes: shapes) {
                    spans.append(segmentStart..<semicolon)
                }
            } else if segment.count >= 16,
                SecretShapes.hasKnownFormat(segment, shapes: shapes)
                    || (shapes.contains(.webhookPath)
                        && (SecretShapes.isBotToken(segment)
                            || (afterMarker > 0 && SecretShapes.isWebhookSecret(segment))))
            {
                spans.append(segmentStart..<end)
            }
            if SecretShapes.isWebhookMarker(segment) {
                afterMarker = 3
            } else if afterMarker > 0 {
                afterMarker -= 1
            }
            segmentStart = end + 1
        }
    }

    /// `name=value` pairs whose value is a secret: listed names, OAuth codes (when
    /// `isOAuthContext` says so), known formats, and random-looking values of credential-like names.
    private func findInParameters(
        _ bytes: [UInt8], _ range: Range<Int>, separator: UInt8, into spans: inout [Range<Int>],
        isOAuthContext: () -> Bool
    ) {
        var pairStart = range.lowerBound
        while pairStart < range.upperBound {
            let pairEnd = bytes[pairStart..<range.upperBound].firstIndex(of: separator) ?? range.upperBound
            if let equals = bytes[pairStart..<pairEnd].firstIndex(of: UInt8(ascii: "=")) {
                let value = (equals + 1)..<pairEnd
                if !value.isEmpty, isSecretParameter(bytes[pairStart..<equals], bytes[value], isOAuthContext) {
                    spans.append(value)
                }
            } else if SecretShapes.hasKnownFormat(bytes[pairStart..<pairEnd], shapes: shapes) {
                spans.append(pairStart..<pairEnd)
            }
            pairStart = pairEnd + 1
        }
    }

    func isSecretParameter(_ name: Bytes, _ value: Bytes, _ isOAuthContext: () -> Bool) -> Bool {
        if SecretShapes.hasKnownFormat(value, shapes: shapes) { return true }
        guard name.count <= 64, name.count >= 2 else { return false }
        let isRandom = shapes.contains(.highEntropy) && SecretShapes.isHighEntropy(value, minimumLength: 16)
        // Most names are neither listed nor `code`, and most values not random: no lower-cased copy.
        guard isRandom || name.count == 4 || name.contains(UInt8(ascii: "%")) || mayBeListed(name) else {
            return false
        }
        let lowered = Self.lowercasedName(name)
        if queryParameters.contains(lowered) { return true }
        if lowered == "code", value.count >= 8, shapes.contains(.oauthCode), isOAuthContext() { return true }
        return isRandom && SecretShapes.isCredentialName(lowered)
    }

    /// Whether a listed parameter name has the length and first letter of `name`.
    private func mayBeListed(_ name: Bytes) -> Bool {
        guard let first = name.first else { return false }
        let lower = first | (first >= UInt8(ascii: "A") && first <= UInt8(ascii: "Z") ? 0x20 : 0)
        return queryParameters.contains { $0.utf8.count == name.count && $0.utf8.first == lower }
    }

    /// A parameter name lower-cased, percent-decoded when it has escapes.
    private static func lowercasedName(_ name: Bytes) -> String {
        let text = String(decoding: name, as: UTF8.self)
        let decoded = name.contains(UInt8(ascii: "%")) ? (text.removingPercentEncoding ?? text) : text
        return decoded.lowercased()
    }

    /// Whether a `code=` parameter is an OAuth authorization code: the query has `state=`, or the
    /// path is a callback's.
    private static func isOAuthContext(_ bytes: [UInt8], path: Range<Int>, query: Range<Int>) -> Bool {
        let queryText = String(decoding: bytes[query], as: UTF8.self)
        if queryText.hasPrefix("state=") || queryText.contains("&state=") { return true }
        let pathText = String(decoding: bytes[path], as: UTF8.self).lowercased()
        return ["callback", "oauth", "authorize", "signin", "login", "redirect"].contains { pathText.contains($0) }
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

    /// The snapshot of `request` that events, logs and reports keep: the canonical URL (and the URL
    /// as received when it differs) and headers redacted.
    public func snapshot(of request: AuditRequest, bodyBytes: Int?) -> RequestSnapshot {
        // One parse for URL and host; an invalid URL is kept as received, with no host.
        let (canonical, host) =
            switch request.canonicalURL {
            case .success(let url): (url.string, url.host)
            case .failure: (request.normalizedURL, request.host)
            }
        return RequestSnapshot(
            method: request.method, url: redact(url: canonical), host: host,
            headers: request.headers.map {
                RequestSnapshot.Header(name: $0.name, value: redact(headerValue: $0.value, name: $0.name))
            },
            bodyBytes: bodyBytes, receivedURL: canonical == request.url ? nil : redact(url: request.url)
        )
    }
}
