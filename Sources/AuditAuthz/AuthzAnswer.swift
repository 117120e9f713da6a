import AuditReport

/// What `audit authz` tells a gateway about one check: send the request upstream (with headers
/// added), or answer the client with a status, headers and body instead.
public struct AuthzAnswer: Sendable, Equatable {
    /// Whether the gateway sends the request upstream.
    public var isAllowed: Bool
    /// The status: 200 for an allowed check; otherwise what the gateway answers its client.
    public var status: Int
    /// An allowed check: headers the gateway adds to the request it sends upstream. A denied one:
    /// the headers of the answer to the client.
    public var headers: [RequestSnapshot.Header]
    /// An allowed check: headers the gateway removes from the request before sending it (the
    /// warning acknowledgement, which concerns RequestAudit alone).
    public var headersToRemove: [String]
    /// The body of a denied check's answer.
    public var body: [UInt8]
    /// Why a check was denied, in words (what its record says), or nil.
    public var reason: String?

    /// Creates an answer.
    public init(
        isAllowed: Bool, status: Int, headers: [RequestSnapshot.Header], headersToRemove: [String] = [],
        body: [UInt8] = [], reason: String? = nil
    ) {
        self.isAllowed = isAllowed
        self.status = status
        self.headers = headers
        self.headersToRemove = headersToRemove
        self.body = body
        self.reason = reason
    }

    /// The value of the header `name` (any case), if it has one.
    public func header(_ name: String) -> String? {
        headers.value(named: name)
    }
}
