import AuditPolicy
import Foundation

/// One audited request, complete: what was asked, what the policy decided, and what happened.
///
/// This is the line format of the audit log (JSON Lines, one record per line) and the payload of
/// `AuditEvent.finished(_:)`. Secrets are redacted before a record is made; a record never holds
/// a request or response body. `docs/audit-log.md` documents the schema.
public struct AuditRecord: Codable, Sendable, Equatable {
    /// The schema version written by this library.
    public static let currentSchema = 1

    /// Schema version of this record.
    public var schema: Int
    /// Unique id of the request.
    public var id: UUID
    /// When the request was seen.
    public var time: Date
    /// The request, redacted.
    public var request: RequestSnapshot
    /// The policy's decision.
    public var decision: DecisionSnapshot
    /// How a `warn` verdict was resolved; nil for other verdicts.
    public var warning: WarningResolution?
    /// What happened to the request.
    public var outcome: OutcomeSnapshot

    /// Creates a record with the current schema version.
    public init(
        id: UUID, time: Date, request: RequestSnapshot, decision: DecisionSnapshot,
        warning: WarningResolution? = nil, outcome: OutcomeSnapshot
    ) {
        self.schema = Self.currentSchema
        self.id = id
        self.time = time
        self.request = request
        self.decision = decision
        self.warning = warning
        self.outcome = outcome
    }
}

/// The parts of a request an audit keeps (already redacted).
public struct RequestSnapshot: Codable, Sendable, Equatable {
    /// One header; names may repeat.
    public struct Header: Codable, Sendable, Equatable {
        /// Header name as sent.
        public var name: String
        /// Header value, or `[REDACTED]`.
        public var value: String

        /// Creates a header.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// HTTP method.
    public var method: String
    /// The URL in canonical form (what every rule saw and what was sent; see `CanonicalURL`), or as
    /// received when it is invalid; secret query values redacted.
    public var url: String
    /// The URL as the client sent it, when canonicalizing changed it (redacted like ``url``).
    public var receivedURL: String?
    /// Lower-cased host.
    public var host: String
    /// Headers, with secret values redacted.
    public var headers: [Header]
    /// Body size in bytes when known (the body itself is never kept).
    public var bodyBytes: Int?
    /// For a request the proxy saw inside a CONNECT tunnel whose TLS it terminated: the id of the
    /// CONNECT's record.
    public var tunnel: UUID?
    /// For an authorization check a gateway asked `audit authz` (outcome kind `authz`): the contract
    /// it came through (`envoy-grpc`, `envoy-http`, `nginx`, `forward-auth`).
    public var gateway: String?
    /// For an authorization check: the id the gateway gave the request (Envoy's `x-request-id`, or
    /// the `X-Request-ID` header a gateway passes), when it sent one.
    public var gatewayRequestID: String?

    /// Creates a snapshot.
    public init(
        method: String, url: String, host: String, headers: [Header], bodyBytes: Int? = nil,
        receivedURL: String? = nil, tunnel: UUID? = nil, gateway: String? = nil, gatewayRequestID: String? = nil
    ) {
        self.receivedURL = receivedURL
        self.tunnel = tunnel
        self.gateway = gateway
        self.gatewayRequestID = gatewayRequestID
        self.method = method
        self.url = url
        self.host = host
        self.headers = headers
        self.bodyBytes = bodyBytes
    }
}

/// What the policy decided, as plain values.
public struct DecisionSnapshot: Codable, Sendable, Equatable {
    /// `pass`, `allow`, `block`, `redirect` or `warn`.
    public var verdict: Verdict.Action
    /// Full id of the deciding rule.
    public var rule: String?
    /// Category of the deciding rule.
    public var category: String?
    /// The deciding rule's message.
    public var message: String?
    /// The redirect target (redacted like the URL).
    public var redirect: String?
    /// Full ids of the matching record rules.
    public var recorded: [String]
    /// Categories of the matching record rules, aligned with `recorded`.
    public var recordedCategories: [String]
    /// Rules whose match failed, with the reason.
    public var errors: [String]
    /// Full id of the matching cache rule, if any: the request's response may be kept and served
    /// again (see the outcome kinds `cached`, `revalidated`, `stored`, `stale`).
    public var cacheRule: String?
    /// Time the decision took, in nanoseconds (the live policy's alone).
    public var nanoseconds: UInt64
    /// What the shadow policy decided, when one is set and it decided differently (redacted like
    /// the live decision); never enforced.
    public var shadow: DecisionSummary?

    /// A snapshot of `verdict`, made in `nanoseconds`.
    public init(_ verdict: Verdict, nanoseconds: UInt64, redirect: String? = nil) {
        self.verdict = verdict.action
        self.rule = verdict.rule?.id
        self.category = verdict.rule?.category
        self.message = verdict.message
        self.redirect = redirect ?? verdict.redirectTarget
        self.recorded = verdict.recorded.map(\.id)
        self.recordedCategories = verdict.recorded.map(\.category)
        self.errors = verdict.errors.map(\.description)
        self.cacheRule = verdict.cacheRule?.id
        self.nanoseconds = nanoseconds
    }
}

/// How a `warn` verdict was resolved.
public struct WarningResolution: Codable, Sendable, Equatable {
    /// Go on with the request, or cancel it.
    public enum Decision: String, Codable, Sendable {
        /// The request went on.
        case proceed
        /// The request was cancelled.
        case cancel
    }

    /// Who decided.
    public enum Source: String, Codable, Sendable {
        /// The host's warning handler answered in time.
        case handler
        /// The handler did not answer in time; the configured default applied.
        case timeout
        /// No handler was set (or it could not be asked); the configured default applied.
        case `default`
        /// The client acknowledged the warning (`audit proxy`: a retry carrying
        /// `Audit-Acknowledge: RULE-ID`).
        case acknowledged
    }

    /// The decision.
    public var decision: Decision
    /// Who made it.
    public var decidedBy: Source

    /// Creates a resolution.
    public init(decision: Decision, decidedBy: Source) {
        self.decision = decision
        self.decidedBy = decidedBy
    }
}

/// What happened to an audited request.
public struct OutcomeSnapshot: Codable, Sendable, Equatable {
    /// The kind of ending.
    public enum Kind: String, Codable, Sendable {
        /// A response came back (any status).
        case response
        /// The transfer failed (timeout, connection refused, …).
        case failure
        /// The policy blocked the request; nothing was sent.
        case blocked
        /// A warning was declined; nothing was sent.
        case warningDeclined
        /// The caller cancelled the request.
        case cancelled
        /// The request carried a body RequestAudit cannot see, so the system loader sent it;
        /// its response is not observed.
        case systemLoader
        /// Recorded traffic: evaluated offline by `audit replay` (status, bytes and duration are the
        /// recording's, when it has them), or answered from a recording by `audit proxy --replay`
        /// (nothing was sent).
        case replayed
        /// A CONNECT tunnel (`audit proxy`) was opened and spliced until one side closed it: `bytes`
        /// went from the server to the client, `sentBytes` from the client to the server.
        case tunnel
        /// A `respond` rule answered locally; nothing was sent. `status` and `bytes` are the local
        /// response's.
        case responded
        /// A cache rule's stored response answered, fresh; nothing was sent. `bytes` were served
        /// from the cache.
        case cached
        /// A stale stored response was revalidated: the server answered 304, and the stored
        /// response (its headers refreshed) was served; `bytes` were served from the cache.
        case revalidated
        /// The response came from the server and was stored for the requests to come.
        case stored
        /// A stale stored response answered: the server could not be reached or answered an error
        /// (500, 502, 503, 504) and the rule's `offline` or `stale-if-error` allowed it, it was
        /// within `stale-while-revalidate` (revalidated in the background), or the request took it
        /// stale (`max-stale`); `bytes` were served from the cache.
        case stale
        /// A gateway's authorization check (`audit authz`): `status` is what the gateway was told
        /// (200: send the request on; otherwise the answer the gateway gives its client). The
        /// request's own response is not observed.
        case authz
    }

    /// An error as plain values.
    public struct ErrorSnapshot: Codable, Sendable, Equatable {
        /// Error domain, e.g. `NSURLErrorDomain`.
        public var domain: String
        /// Error code, e.g. -1001.
        public var code: Int
        /// Human-readable description.
        public var description: String

        /// Creates an error snapshot.
        public init(domain: String, code: Int, description: String) {
            self.domain = domain
            self.code = code
            self.description = description
        }
    }

    /// The kind of ending.
    public var kind: Kind
    /// HTTP status of the final response.
    public var status: Int?
    /// Body bytes delivered to the caller.
    public var bytes: Int?
    /// From the request being seen to its end, in milliseconds.
    public var durationMilliseconds: Double
    /// The URL the request was sent to (the redirect target for a `redirect` verdict).
    public var forwardedURL: String?
    /// The URL of the final response after HTTP redirects (redacted).
    public var finalURL: String?
    /// Each HTTP redirect followed, in order (redacted).
    public var redirects: [String]
    /// The failure, for `failure`, `blocked`, `warningDeclined` and `cancelled`.
    public var error: ErrorSnapshot?
    /// Bytes sent on to the server: the request body (`audit proxy`), or everything the client sent
    /// through a tunnel.
    public var sentBytes: Int?

    /// Creates an outcome.
    public init(
        kind: Kind, status: Int? = nil, bytes: Int? = nil, durationMilliseconds: Double, forwardedURL: String? = nil,
        finalURL: String? = nil, redirects: [String] = [], error: ErrorSnapshot? = nil, sentBytes: Int? = nil
    ) {
        self.kind = kind
        self.status = status
        self.bytes = bytes
        self.sentBytes = sentBytes
        self.durationMilliseconds = durationMilliseconds
        self.forwardedURL = forwardedURL
        self.finalURL = finalURL
        self.redirects = redirects
        self.error = error
    }
}

extension [RequestSnapshot.Header] {
    /// The headers as one value per name, repeated names' values joined with `, ` (RFC 9110 §5.3),
    /// as `HTTPURLResponse` and `HandlerResponse` take them.
    public var joinedFields: [String: String] {
        var fields: [String: String] = [:]
        for header in self {
            fields[header.name] = fields[header.name].map { $0 + ", " + header.value } ?? header.value
        }
        return fields
    }

    /// The value of the first header named `name` (compared without case); nil when there is none.
    public func value(named name: String) -> String? {
        let lowered = name.lowercased()
        return first { $0.name.lowercased() == lowered }?.value
    }
}
