import AuditReport
import Foundation

/// What is kept of a response besides its body: its status, its headers, when it was asked for
/// and received, and the request header values its `Vary` names.
public struct StoredHead: Sendable, Codable, Equatable {
    /// The canonical URL the response answers (a GET).
    public var url: String
    /// The status.
    public var status: Int
    /// The end-to-end headers, as received (without `Transfer-Encoding`, `Connection` and other
    /// hop-by-hop fields; `Content-Length` is the stored body's).
    public var headers: [RequestSnapshot.Header] {
        didSet { derive() }
    }
    /// The `Date` header's instant and the `Cache-Control` directives, read once from ``headers``
    /// (every lookup needs them).
    public private(set) var date: Date?
    /// The response's `Cache-Control`; without one, a `Pragma: no-cache` counts as `no-cache`, as
    /// browsers and Squid take it from HTTP/1.0 servers.
    public private(set) var cacheControl = CacheControl([])
    /// When the request that got the response was sent (RFC 9111 §4.2.3 `request_time`).
    public var requestTime: Date
    /// When the response was received (`response_time`).
    public var responseTime: Date
    /// For each header `Vary` names (lower-case), the request's value (nil when it had none).
    public var varied: [String: String?]
    /// The `Age` the response came with, in seconds (RFC 9111 §4.2.3 `age_value`): how long it had
    /// already been kept by caches before this one; 0 without one.
    public var ageValue: Int
    /// The body's length in bytes.
    public var bodyLength: Int
    /// The id of the cache rule that stored it.
    public var rule: String?

    /// The values of header `name` (case-insensitive).
    public func values(_ name: String) -> [String] {
        headers.filter { $0.name.equalsIgnoringASCIICase(name) }.map(\.value)
    }

    /// The first value of header `name`.
    public func value(_ name: String) -> String? {
        headers.first { $0.name.equalsIgnoringASCIICase(name) }?.value
    }

    /// A head from its parts.
    public init(
        url: String, status: Int, headers: [RequestSnapshot.Header], requestTime: Date, responseTime: Date,
        varied: [String: String?], ageValue: Int = 0, bodyLength: Int, rule: String?
    ) {
        self.url = url
        self.status = status
        self.headers = headers
        self.requestTime = requestTime
        self.responseTime = responseTime
        self.varied = varied
        self.ageValue = ageValue
        self.bodyLength = bodyLength
        self.rule = rule
        derive()
    }

    private enum CodingKeys: String, CodingKey {
        case url, status, headers, requestTime, responseTime, varied, ageValue, bodyLength, rule
    }

    /// Reads a head written by ``encode(to:)``.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            url: try container.decode(String.self, forKey: .url),
            status: try container.decode(Int.self, forKey: .status),
            headers: try container.decode([RequestSnapshot.Header].self, forKey: .headers),
            requestTime: try container.decode(Date.self, forKey: .requestTime),
            responseTime: try container.decode(Date.self, forKey: .responseTime),
            varied: try container.decode([String: String?].self, forKey: .varied),
            ageValue: try container.decodeIfPresent(Int.self, forKey: .ageValue) ?? 0,
            bodyLength: try container.decode(Int.self, forKey: .bodyLength),
            rule: try container.decodeIfPresent(String.self, forKey: .rule))
    }

    /// Reads `date` and `cacheControl` from the headers.
    private mutating func derive() {
        date = value("date").flatMap(HTTPDate.parse)
        let control = values("cache-control")
        let isPragmaNoCache = control.isEmpty && values("pragma").contains { $0.lowercased().contains("no-cache") }
        cacheControl = CacheControl(isPragmaNoCache ? ["no-cache"] : control)
    }
}
