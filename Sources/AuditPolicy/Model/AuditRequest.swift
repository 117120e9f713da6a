/// The parts of an HTTP request a policy looks at: a plain value, independent of `URLRequest`.
public struct AuditRequest: Sendable, Hashable, Codable {
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

    /// The HTTP method, upper-cased.
    public let method: String
    /// The URL as sent.
    public let url: String
    /// The headers in the order sent.
    public let headers: [Header]

    /// Creates a request; `method` is upper-cased.
    public init(method: String = "GET", url: String, headers: [Header] = []) {
        self.method = method.uppercased()
        self.url = url
        self.headers = headers
    }

    /// The URL rules with `field=url` see: scheme and host lower-cased, the scheme's default port
    /// removed, the fragment dropped; user info, path and query kept exactly as sent.
    ///
    /// `HTTPS://Shop.Example.COM:443/Cart?id=1#top` becomes `https://shop.example.com/Cart?id=1`.
    public var normalizedURL: String { URLParts(url).normalized }

    /// The host rules with `field=host` see: lower-cased, no port, no IPv6 brackets.
    public var host: String { URLParts(url).host }

    /// The URL's path as sent (empty when it has none), without the query.
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
