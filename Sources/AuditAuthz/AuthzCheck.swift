import AuditPolicy

/// One authorization check a gateway asks for: the request it is about to send upstream, as the
/// gateway describes it, before anything is decided.
///
/// Each contract (Envoy's gRPC and HTTP `ext_authz`, nginx `auth_request`, Caddy's `forward_auth`
/// and Traefik's ForwardAuth) describes the request in its own fields; the listeners turn those
/// into a check, and ``AuthzDecider`` decides every check the same way.
public struct AuthzCheck: Sendable, Equatable {
    /// The external-authorization contract a check came through.
    public enum Contract: String, Sendable, CaseIterable {
        /// Envoy's `envoy.service.auth.v3.Authorization/Check` over gRPC.
        case envoyGRPC = "envoy-grpc"
        /// Envoy's HTTP authorization service: the original method, path and headers.
        case envoyHTTP = "envoy-http"
        /// nginx `auth_request`: `X-Original-Method`, `X-Original-URI` (or `X-Original-URL`), `X-Forwarded-Proto`,
        /// `X-Forwarded-Host`.
        case nginx
        /// Caddy `forward_auth` and Traefik ForwardAuth: `X-Forwarded-Method`, `-Proto`, `-Host`,
        /// `-Uri`.
        case forwardAuth = "forward-auth"
    }

    /// The contract it came through.
    public var contract: Contract
    /// The request's method.
    public var method: String
    /// `http` or `https`.
    public var scheme: String
    /// The host and port the request names (`:authority` or `Host`).
    public var authority: String
    /// The request target, in origin form: path and query as the client sent them.
    public var target: String
    /// The request's headers, as the client sent them (without the contract's own).
    public var headers: [AuditRequest.Header]
    /// The size of the request's body, when the gateway says.
    public var bodyBytes: Int?
    /// The id the gateway gave the request, when it sent one.
    public var requestID: String?
    /// Why the check cannot describe a request (a field missing or malformed), or nil: such a check
    /// is refused, and recorded.
    public var problem: String?

    /// Creates a check.
    public init(
        contract: Contract, method: String, scheme: String, authority: String, target: String,
        headers: [AuditRequest.Header], bodyBytes: Int? = nil, requestID: String? = nil, problem: String? = nil
    ) {
        self.contract = contract
        self.method = method
        self.scheme = scheme
        self.authority = authority
        self.target = target
        self.headers = headers
        self.bodyBytes = bodyBytes
        self.requestID = requestID
        self.problem = problem ?? Self.problem(method: method, scheme: scheme, authority: authority, target: target)
    }

    /// The request's absolute URL, as the server will read it (the policy canonicalizes it); the
    /// target alone when the check names no host, so that it is recorded without one (URL parsing
    /// reads `http:///admin` as the host `admin`).
    public var url: String { authority.isEmpty ? target : "\(scheme)://\(authority)\(target)" }

    /// The request the policy decides.
    public var request: AuditRequest { AuditRequest(method: method, url: url, headers: headers) }

    /// What is wrong with these fields, or nil.
    private static func problem(method: String, scheme: String, authority: String, target: String) -> String? {
        if method.isEmpty { return "the check names no method" }
        if !method.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) { return "the method '\(method)' is not a token" }
        if scheme != "http" && scheme != "https" { return "the scheme '\(scheme)' is neither http nor https" }
        if authority.isEmpty { return "the check names no host" }
        if !target.hasPrefix("/") { return "the request target '\(target)' is not a path (it must start with '/')" }
        return nil
    }
}
