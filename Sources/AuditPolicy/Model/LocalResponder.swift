/// What a `respond` rule answers with, as written in its section header.
///
/// ```
/// [respond 200] body="{\"user\":\"$1\"}" type=application/json
/// mock-user ^https://api\.example\.test/users/(\w+)$
///
/// [respond 200] file=pixel.gif
/// pixel ^https?://[^/]*tracker\.
///
/// [respond handler:bridge]
/// bridge ^bridge://
/// ```
public struct LocalResponder: Sendable, Hashable {
    /// Where the body comes from.
    public enum Source: Sendable, Hashable {
        /// No body (`[respond 204]`).
        case empty
        /// An inline body; `$0`…`$9` are replaced by the rule's captures.
        case body(RedirectTemplate)
        /// A file read when the policy loaded: its path as written (relative to the `.rules` file)
        /// and its bytes.
        case file(path: String, bytes: [UInt8])
        /// A Swift handler registered under this name answers.
        case handler(String)
    }

    /// The status (200–599); nil for a handler, which gives its own.
    public let status: Int?
    /// The `Content-Type` of the body; nil for an empty body and for a handler.
    public let contentType: String?
    /// Where the body comes from.
    public let source: Source

    /// Creates a responder.
    public init(status: Int?, contentType: String?, source: Source) {
        self.status = status
        self.contentType = contentType
        self.source = source
    }

    /// The largest file a `file=` responder may serve: the policy holds it in memory.
    public static let maximumFileBytes = 8 * 1024 * 1024

    /// The statuses a responder may give.
    public static let statuses = 200...599

    /// The handler's name, when a handler answers.
    public var handler: String? {
        if case .handler(let name) = source { name } else { nil }
    }

    /// Whether the body substitutes captures with JSON string escaping (the type is JSON).
    var escapesForJSON: Bool {
        guard let contentType else { return false }
        let essence = (contentType.split(separator: ";").first ?? "").filter { $0 != " " && $0 != "\t" }.lowercased()
        return essence == "application/json" || essence.hasSuffix("+json") || essence == "text/json"
    }

    /// The response for a match whose groups are `groups` (index 0 is the whole match).
    func response(groups: [String?]) -> LocalResponse {
        switch source {
        case .empty:
            LocalResponse(status: status ?? 200, contentType: contentType, body: [])
        case .body(let template):
            LocalResponse(
                status: status ?? 200, contentType: contentType, body: Array(expand(template, groups: groups).utf8))
        case .file(_, let bytes):
            LocalResponse(status: status ?? 200, contentType: contentType, body: bytes)
        case .handler(let name):
            LocalResponse(handler: name)
        }
    }

    /// The body template with the captures substituted, escaped for JSON when the type is JSON.
    private func expand(_ template: RedirectTemplate, groups: [String?]) -> String {
        guard escapesForJSON else { return template.expand(groups: groups) }
        return template.expand(groups: groups, escape: Self.jsonEscaped)
    }

    /// `text` escaped to sit inside a JSON string: quotes, backslashes and control characters.
    static func jsonEscaped(_ text: String) -> String {
        var escaped = ""
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": escaped += "\\\""
            case "\\": escaped += "\\\\"
            case "\n": escaped += "\\n"
            case "\r": escaped += "\\r"
            case "\t": escaped += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                escaped += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: escaped.unicodeScalars.append(scalar)
            }
        }
        return escaped
    }

    /// The content type a file's extension implies; `application/octet-stream` when unknown.
    static func contentType(forFile path: String) -> String {
        let name = path.split(separator: "/").last ?? Substring(path)
        let ext = name.split(separator: ".").count > 1 ? name.split(separator: ".").last.map { $0.lowercased() } : nil
        return ext.flatMap { typesByExtension[$0] } ?? "application/octet-stream"
    }

    private static let typesByExtension = [
        "gif": "image/gif", "png": "image/png", "jpg": "image/jpeg", "jpeg": "image/jpeg", "svg": "image/svg+xml",
        "webp": "image/webp", "ico": "image/x-icon", "json": "application/json", "js": "text/javascript",
        "css": "text/css", "html": "text/html; charset=utf-8", "htm": "text/html; charset=utf-8",
        "txt": "text/plain; charset=utf-8", "xml": "application/xml", "pdf": "application/pdf",
        "wasm": "application/wasm", "bin": "application/octet-stream",
    ]
}

/// A local response a verdict gives: what a `respond` rule answers for one request.
public struct LocalResponse: Sendable, Equatable {
    /// The status; nil when a handler answers.
    public let status: Int?
    /// The `Content-Type`; nil when there is no body or a handler answers.
    public let contentType: String?
    /// The body, captures substituted; empty when a handler answers.
    public let body: [UInt8]
    /// The name of the handler that answers, if one does.
    public let handler: String?

    /// A response with this status, type and body.
    public init(status: Int, contentType: String?, body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.body = body
        self.handler = nil
    }

    /// E.g. `200, image/gif, 43 bytes`, `204, 0 bytes` or `handler bridge`.
    public var summary: String {
        if let handler { return "handler \(handler)" }
        let status = status.map(String.init) ?? "-"
        let bytes = body.count == 1 ? "1 byte" : "\(body.count) bytes"
        return [status, contentType, bytes].compactMap { $0 }.joined(separator: ", ")
    }

    /// A response a handler gives.
    public init(handler: String) {
        self.status = nil
        self.contentType = nil
        self.body = []
        self.handler = handler
    }
}
