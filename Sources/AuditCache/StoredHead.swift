import Foundation

/// One header field, as received.
public struct CacheHeader: Sendable, Codable, Equatable {
    /// The name, as the server wrote it.
    public var name: String
    /// The value.
    public var value: String

    /// A header field.
    public init(name: String, value: String) {
        self.name = name
        self.value = value
    }
}

/// What is kept of a response besides its body: its status, its headers, when it was asked for
/// and received, and the request header values its `Vary` names.
public struct StoredHead: Sendable, Codable, Equatable {
    /// The canonical URL the response answers (a GET).
    public var url: String
    /// The status.
    public var status: Int
    /// The end-to-end headers, as received (without `Transfer-Encoding`, `Connection` and other
    /// hop-by-hop fields; `Content-Length` is the stored body's).
    public var headers: [CacheHeader]
    /// When the request that got the response was sent (RFC 9111 §4.2.3 `request_time`).
    public var requestTime: Date
    /// When the response was received (`response_time`).
    public var responseTime: Date
    /// For each header `Vary` names (lower-case), the request's value (nil when it had none).
    public var varied: [String: String?]
    /// The body's length in bytes.
    public var bodyLength: Int
    /// The id of the cache rule that stored it.
    public var rule: String?

    /// The values of header `name` (case-insensitive).
    public func values(_ name: String) -> [String] {
        headers.filter { $0.name.caseInsensitiveCompare(name) == .orderedSame }.map(\.value)
    }

    /// The first value of header `name`.
    public func value(_ name: String) -> String? { values(name).first }

    /// The response's `Cache-Control`.
    public var cacheControl: CacheControl { CacheControl(values("cache-control")) }
}
