/// The parts of an HTTP request a policy looks at: a plain value, independent of `URLRequest`.
public struct AuditRequest: Sendable, Hashable, Codable, CustomReflectable {
    /// One header as sent; names compare case-insensitively, and a name may repeat.
    public struct Header: Sendable, Hashable, Codable {
        /// The header name as sent.
        public let name: String
        /// The header value as sent.
        public let value: String

        /// Creates a header.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The request's fields, kept in one object: a copy of a request (a loop over an array of
    /// them copies each one) then costs one reference count, not one for each field and the
    /// header array.
    private final class Storage: Sendable {
        let method: String
        let url: String
        let headers: [Header]

        init(method: String, url: String, headers: [Header]) {
            self.method = method
            self.url = url
            self.headers = headers
        }
    }

    private let storage: Storage

    /// The HTTP method, upper-cased.
    public var method: String {
        _read { yield storage.method }
    }
    /// The URL as sent.
    public var url: String {
        _read { yield storage.url }
    }
    /// The headers in the order sent.
    public var headers: [Header] {
        _read { yield storage.headers }
    }

    /// Creates a request; `method` is upper-cased.
    public init(method: String = "GET", url: String, headers: [Header] = []) {
        storage = Storage(method: method.uppercased(), url: url, headers: headers)
    }

    /// Whether two requests have the same method, URL and headers.
    public static func == (lhs: AuditRequest, rhs: AuditRequest) -> Bool {
        lhs.storage === rhs.storage
            || (lhs.method == rhs.method && lhs.url == rhs.url && lhs.headers == rhs.headers)
    }

    /// Feeds the method, URL and headers to `hasher`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(method)
        hasher.combine(url)
        hasher.combine(headers)
    }

    /// Its fields, for `print` and `dump`: `AuditRequest(method: "GET", url: "…", headers: [])`.
    public var customMirror: Mirror {
        Mirror(self, children: ["method": method, "url": url, "headers": headers], displayStyle: .struct)
    }

    private enum CodingKeys: String, CodingKey {
        case method, url, headers
    }

    /// Decodes a request as it was encoded: the method as written, not upper-cased again.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        storage = Storage(
            method: try container.decode(String.self, forKey: .method),
            url: try container.decode(String.self, forKey: .url),
            headers: try container.decode([Header].self, forKey: .headers))
    }

    /// Encodes the method, URL and headers under those keys.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(method, forKey: .method)
        try container.encode(url, forKey: .url)
        try container.encode(headers, forKey: .headers)
    }

    /// The URL rules with `field=url` see: the canonical form (see ``CanonicalURL``), or the URL as
    /// written when it is invalid.
    ///
    /// `HTTPS://Shop.Example.COM.:443/a/../Cart?%69d=1#top` becomes `https://shop.example.com/Cart?id=1`.
    public var normalizedURL: String { URLParts.isCanonical(url) ? url : URLParts(url).normalized }

    /// The URL in canonical form, or why it is invalid.
    public var canonicalURL: Result<CanonicalURL, URLRejection> {
        Result { () throws(URLRejection) in try CanonicalURL(url) }
    }

    /// The host rules with `field=host` see: canonical, no port, no IPv6 brackets.
    public var host: String { URLParts(url).host }

    /// The URL's canonical path (`/` for an http(s) URL without one), without the query.
    public var path: String {
        let parts = URLParts(url)
        return String(decoding: parts.normalizedBytes[parts.pathRange], as: UTF8.self)
    }

    /// The values of header `name` (any case) joined with `, `, or nil when the request has none.
    public func headerValue(_ name: String) -> String? {
        let values = headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }
}
