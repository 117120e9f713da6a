import AuditPolicy
import NIOCore
import NIOHTTP1

/// How the HTTP listener of `audit authz` reads a gateway's check: which contract, and the request
/// it describes.
public struct HTTPContracts: Sendable {
    /// Which HTTP contract the listener expects.
    public enum Selection: String, Sendable, CaseIterable {
        /// Told apart by their headers: `X-Original-URI` is nginx, `X-Forwarded-Uri` is Caddy or
        /// Traefik, anything else is Envoy's HTTP service.
        case auto
        /// Envoy's HTTP `ext_authz` service only.
        case envoy
        /// nginx `auth_request` only.
        case nginx
        /// Caddy `forward_auth` and Traefik ForwardAuth only.
        case forwardAuth = "forward-auth"
    }

    /// Which contract the listener expects.
    public var selection: Selection
    /// For Envoy's HTTP service: the `path_prefix` the gateway puts before the original path.
    public var pathPrefix: String

    /// Contracts as `selection` says, with Envoy's `path_prefix`.
    public init(selection: Selection = .auto, pathPrefix: String = "") {
        self.selection = selection
        self.pathPrefix = pathPrefix
    }

    /// The headers of nginx's check that describe the check, not the request: they are not decided.
    private static let nginxFields: Set<String> = [
        "x-original-uri", "x-original-method", "x-forwarded-proto", "x-forwarded-host", "content-length", "host",
    ]
    /// The same for Caddy's and Traefik's forward auth.
    private static let forwardAuthFields: Set<String> = [
        "x-forwarded-method", "x-forwarded-uri", "x-forwarded-proto", "x-forwarded-host", "content-length", "host",
    ]

    /// Headers that concern the check's own connection, never the request it describes.
    private static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
    ]

    /// What a check of `contract` lacks of the headers that name the request, naming the header and
    /// the gateway setting that sends it, or nil.
    private static func missingField(contract: AuthzCheck.Contract, method: String?, target: String?, host: String?)
        -> String?
    {
        switch contract {
        case .nginx:
            // nginx's auth subrequest is always a GET, so its own method says nothing of the request's.
            if method == nil {
                return "it has no X-Original-Method header (nginx: proxy_set_header X-Original-Method $request_method)"
            }
            if target == nil {
                return "it has no X-Original-URI header (nginx: proxy_set_header X-Original-URI $request_uri)"
            }
            if host == nil {
                return "it has no X-Forwarded-Host or Host header (nginx: proxy_set_header X-Forwarded-Host $host)"
            }
        case .forwardAuth:
            if method == nil { return "it has no X-Forwarded-Method header" }
            if target == nil { return "it has no X-Forwarded-Uri header" }
            if host == nil { return "it has no X-Forwarded-Host header" }
        case .envoyHTTP, .envoyGRPC:
            if host == nil { return "it has no Host header" }
        }
        return nil
    }

    /// Whether `authority` (a `Host` value) names `address`: its IP address (or `localhost` for a
    /// loopback one) and its port.
    private static func names(_ authority: String, _ address: SocketAddress) -> Bool {
        guard let ip = address.ipAddress?.lowercased(), let colon = authority.lastIndex(of: ":"),
            Int(authority[colon...].dropFirst()) == address.port
        else { return false }
        var host = authority[..<colon].lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let isLoopback = ip == "::1" || ip.hasPrefix("127.")
        return host == ip || (isLoopback && host == "localhost")
    }

    /// The check `head` describes; `receivedAt` is the listener's address the check came to, by
    /// which an nginx check whose `Host` names audit authz itself (nginx's default for a
    /// `proxy_pass` to it) is refused rather than decided for the wrong host.
    public func check(_ head: HTTPRequestHead, receivedAt: SocketAddress? = nil) -> AuthzCheck {
        let headers = head.headers
        let contract: AuthzCheck.Contract =
            switch selection {
            case .envoy: .envoyHTTP
            case .nginx: .nginx
            case .forwardAuth: .forwardAuth
            case .auto:
                headers.contains(name: "x-original-uri")
                    ? .nginx : headers.contains(name: "x-forwarded-uri") ? .forwardAuth : .envoyHTTP
            }
        // The contract's own headers (not the request's), and the one naming the request's host.
        let own: Set<String>
        let method: String?
        let target: String?
        let hostField: String
        switch contract {
        case .nginx:
            own = Self.nginxFields
            (method, target) = (headers.first(name: "x-original-method"), headers.first(name: "x-original-uri"))
            // nginx's recipe sets X-Forwarded-Host; without it, `proxy_set_header Host $host` does.
            hostField = headers.contains(name: "x-forwarded-host") ? "x-forwarded-host" : "host"
        case .forwardAuth:
            own = Self.forwardAuthFields
            (method, target) = (headers.first(name: "x-forwarded-method"), headers.first(name: "x-forwarded-uri"))
            hostField = "x-forwarded-host"
        case .envoyHTTP, .envoyGRPC:
            own = []
            method = head.method.rawValue
            target = head.uri.hasPrefix(pathPrefix) ? String(head.uri.dropFirst(pathPrefix.count)) : nil
            hostField = "host"
        }
        // One value without a comma, as nearly every check has, needs no split into a list.
        let named = headers[hostField]
        let hosts =
            named.count == 1 && !named[0].utf8.contains(UInt8(ascii: ","))
            ? [Substring(named[0])] : headers[canonicalForm: hostField]
        let authority = hosts.first.map(String.init)
        var problem = Self.missingField(contract: contract, method: method, target: target, host: authority)
        if contract == .nginx, hostField == "host", let authority, let receivedAt, Self.names(authority, receivedAt) {
            problem =
                "its Host names audit authz itself (\(authority)), not the request's host, and it has no "
                + "X-Forwarded-Host header (nginx: proxy_set_header X-Forwarded-Host $host)"
        }
        if hosts.count > 1 { problem = "the check names more than one host (\(hosts.joined(separator: ", ")))" }
        if target == nil, contract == .envoyHTTP {
            problem = "the check's path '\(head.uri)' does not start with the path prefix '\(pathPrefix)'"
        }
        let scheme = headers.first(name: "x-forwarded-proto")?.lowercased() ?? "http"
        // The request's Host is the host the check names (the check's own Host names audit authz).
        var decided: [AuditRequest.Header] = []
        if own.contains("host"), let authority { decided.append(.init(name: "Host", value: authority)) }
        for (name, value) in headers {
            let lowered = name.lowercased()
            guard !own.contains(lowered), !Self.hopByHop.contains(lowered) else { continue }
            decided.append(AuditRequest.Header(name: name, value: value))
        }
        let bodyBytes = contract == .envoyHTTP ? headers.first(name: "content-length").flatMap { Int($0) } : nil
        return AuthzCheck(
            contract: contract, method: method ?? "", scheme: scheme, authority: authority ?? "",
            target: target ?? "", headers: decided,
            bodyBytes: bodyBytes, requestID: headers.first(name: "x-request-id"), problem: problem)
    }
}
