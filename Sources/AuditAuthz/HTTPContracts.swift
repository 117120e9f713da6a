import AuditPolicy
import NIOCore
import NIOHTTP1

/// How the HTTP listener of `audit authz` reads a gateway's check: which contract, and the request
/// it describes.
public struct HTTPContracts: Sendable {
    /// Which HTTP contract the listener expects.
    public enum Selection: String, Sendable, CaseIterable {
        /// Told apart by their headers: `X-Original-URI`, `X-Original-URL` or `X-Original-Method` is
        /// nginx, `X-Forwarded-Uri` or `X-Forwarded-Method` is Caddy or Traefik, anything else is
        /// Envoy's HTTP service.
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
        "x-original-uri", "x-original-url", "x-original-method", "x-forwarded-proto", "x-forwarded-host",
        "content-length", "host",
    ]
    /// The headers by which `auto` tells an nginx check, and a Caddy or Traefik one: any one of them,
    /// so that a check with part of a recipe is refused for what it lacks rather than decided as
    /// Envoy's (for the check's own path and host).
    private static let nginxNames = ["x-original-uri", "x-original-url", "x-original-method"]
    private static let forwardAuthNames = ["x-forwarded-uri", "x-forwarded-method"]
    /// The same for Caddy's and Traefik's forward auth.
    private static let forwardAuthFields: Set<String> = [
        "x-forwarded-method", "x-forwarded-uri", "x-forwarded-proto", "x-forwarded-host", "content-length", "host",
    ]

    /// Headers that concern the check's own connection, never the request it describes.
    private static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
    ]

    /// The request's scheme an `X-Forwarded-Proto` value names: `ws` and `wss`, which Traefik sends for a
    /// WebSocket upgrade, are the `http` and `https` request that asks for it (as `audit proxy` sees one).
    static func scheme(forwardedProto: String) -> String {
        switch forwardedProto.lowercased() {
        case "ws": "http"
        case "wss": "https"
        case let other: other
        }
    }

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
                return "it has no X-Original-URI or X-Original-URL header "
                    + "(nginx: proxy_set_header X-Original-URI $request_uri)"
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
                Self.nginxNames.contains(where: headers.contains(name:))
                    ? .nginx
                    : Self.forwardAuthNames.contains(where: headers.contains(name:)) ? .forwardAuth : .envoyHTTP
            }
        // The contract's own headers (not the request's), and the one naming the request's host.
        let own: Set<String>
        let method: String?
        var target: String?
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
        var authority = hosts.first.map(String.init)
        let forwardedScheme = headers.first(name: "x-forwarded-proto").map(Self.scheme(forwardedProto:))
        var scheme = forwardedScheme ?? "http"
        var problem: String?
        // ingress-nginx's and Authelia's recipes name the request by one absolute URL instead.
        let originalURL = contract == .nginx ? headers.first(name: "x-original-url") : nil
        if let originalURL {
            if let named = OriginalURL(originalURL) {
                // The check's own Host names audit authz (ingress-nginx sets it so): only X-Forwarded-Host counts.
                let forwardedHost = hostField == "x-forwarded-host" ? authority : nil
                problem = named.disagreement(uri: target, host: forwardedHost, scheme: forwardedScheme)
                (scheme, authority, target) = (named.scheme, named.authority, named.target)
            } else {
                problem = "its X-Original-URL '\(originalURL)' is not an absolute http or https URL"
            }
        }
        // A request sent in absolute form (`GET http://host/path`, as to a proxy) reaches nginx's
        // $request_uri and Caddy's and Traefik's X-Forwarded-Uri as it was sent: the server serves its
        // path, for the host it names, which must be the one the check names.
        if contract != .envoyHTTP, originalURL == nil, let sent = target, !sent.hasPrefix("/"),
            let absolute = OriginalURL(sent)
        {
            if let authority, authority.lowercased() != absolute.authority.lowercased() {
                let field = hostField == "host" ? "Host" : "X-Forwarded-Host"
                problem = "its request target (\(sent)) names another host than its \(field) (\(authority))"
            }
            target = absolute.target
        }
        problem = problem ?? Self.missingField(contract: contract, method: method, target: target, host: authority)
        if contract == .nginx, originalURL == nil, hostField == "host", let authority, let receivedAt,
            Self.names(authority, receivedAt)
        {
            problem =
                "its Host names audit authz itself (\(authority)), not the request's host, and it has no "
                + "X-Forwarded-Host header (nginx: proxy_set_header X-Forwarded-Host $host)"
        }
        if hosts.count > 1 { problem = "the check names more than one host (\(hosts.joined(separator: ", ")))" }
        if target == nil, contract == .envoyHTTP {
            problem = "the check's path '\(head.uri)' does not start with the path prefix '\(pathPrefix)'"
        }
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

/// The request an nginx check names in `X-Original-URL`, as ingress-nginx's and Authelia's recipes
/// send it (`proxy_set_header X-Original-URL $scheme://$http_host$request_uri`).
struct OriginalURL: Equatable {
    /// `http` or `https`.
    let scheme: String
    /// Host and port, as the URL spells them.
    let authority: String
    /// Path and query (`/` when the URL has no path).
    let target: String

    /// The parts of `url`; nil when it is not an absolute http or https URL with a host.
    init?(_ url: String) {
        guard let separator = url.range(of: "://") else { return nil }
        let scheme = url[..<separator.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { return nil }
        let rest = url[separator.upperBound...]
        let end = rest.firstIndex { $0 == "/" || $0 == "?" || $0 == "#" } ?? rest.endIndex
        guard end > rest.startIndex, !rest[end...].hasPrefix("#") else { return nil }
        self.scheme = scheme
        authority = String(rest[..<end])
        let target = rest[end...]
        self.target = target.hasPrefix("/") ? String(target) : "/" + target
    }

    /// Why the check's other headers (`X-Original-URI`, `X-Forwarded-Host`, `X-Forwarded-Proto`) name
    /// another request than this one, or nil: the gateway and the policy could read different ones.
    func disagreement(uri: String?, host: String?, scheme forwardedScheme: String?) -> String? {
        let url = "\(scheme)://\(authority)\(target)"
        if let uri, uri != target { return "its X-Original-URL (\(url)) and X-Original-URI (\(uri)) differ" }
        if let host, host.lowercased() != authority.lowercased() {
            return "its X-Original-URL (\(url)) and X-Forwarded-Host (\(host)) differ"
        }
        if let forwardedScheme, forwardedScheme != scheme {
            return "its X-Original-URL (\(url)) and X-Forwarded-Proto (\(forwardedScheme)) differ"
        }
        return nil
    }
}
