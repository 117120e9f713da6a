#if TLSInterception
    import AuditPolicy
    import AuditTLS
    import NIOSSL

    /// TLS interception in `audit proxy`: which CONNECT tunnels it terminates, the certificates it
    /// shows clients, and how it verifies servers.
    ///
    /// An intercepted tunnel's requests are decided one by one like plain HTTP requests, on their full
    /// `https://` URL, method and headers; every action works inside it. Other tunnels are spliced and
    /// decided on their host alone.
    public struct TLSInterceptionSettings: Sendable {
        /// Which tunnels are terminated.
        public enum Scope: String, Sendable, CaseIterable {
            /// Those to origins some rule could decide on more than the origin (a path, method,
            /// query or header rule, or a `redirect`, `respond` or `warn` rule).
            case selective
            /// Every tunnel (but those to passthrough hosts).
            case all
        }

        /// Which tunnels are terminated.
        public var scope: Scope
        /// Hosts whose tunnels are never terminated (pinned clients): `example.org`, or
        /// `*.example.org` for its subdomains and itself, in canonical form (lower case, IDNA-mapped, no
        /// trailing dot, IPv6 without brackets).
        public private(set) var passthrough: [String]
        /// The certificates shown to clients, minted per host by the CA.
        public let leaves: LeafCertificates
        /// How servers are verified: the system's roots plus `--upstream-ca` files.
        public let upstreamContext: NIOSSLContext

        /// Interception with certificates from `authority`, servers verified against the system's roots
        /// and the PEM certificates of `upstreamRootFiles`.
        ///
        /// - Throws: ``TLSSetupError`` naming a roots file that cannot be used, or a `passthrough` pattern
        ///   that names no host (a URL, a port, a path).
        public init(
            authority: CertificateAuthority, scope: Scope = .selective, passthrough: [String] = [],
            upstreamRootFiles: [String] = [], leafCapacity: Int = 1_024
        ) throws(TLSSetupError) {
            self.scope = scope
            self.passthrough = try passthrough.map(Self.canonicalPassthrough)
            leaves = try LeafCertificates(authority: authority, capacity: leafCapacity)
            upstreamContext = try UpstreamTLS.clientContext(additionalRootFiles: upstreamRootFiles)
        }

        /// `pattern` (`example.org`, `*.example.org`, an IP address) with its host in canonical form, as
        /// a CONNECT's host is compared: `EXAMPLE.org.`, `[::1]` and `2130706433` name `example.org`, `::1`
        /// and `127.0.0.1`.
        ///
        /// - Throws: ``TLSSetupError/passthroughPattern(_:)`` for a pattern that names no host.
        public static func canonicalPassthrough(_ pattern: String) throws(TLSSetupError) -> String {
            let wildcard = pattern.hasPrefix("*.")
            var host = wildcard ? String(pattern.dropFirst(2)) : pattern
            // Read as a CONNECT's `host:port` is. An IPv6 address is written with or without its
            // brackets, so a `:` outside them is a port (`example.org:443`, `[::1]:443`): refused. A
            // fragment or a `*` would be taken as part of the host.
            if host.contains(":"), !host.hasPrefix("[") { host = "[\(host)]" }
            guard !host.contains(where: { "#*".contains($0) }),
                let target = ProxyTarget(connectAuthority: host + ":443")
            else { throw .passthroughPattern(pattern) }
            return wildcard ? "*." + target.host : target.host
        }

        /// Whether `host` (canonical) is one of ``passthrough``.
        public func isPassthrough(_ host: String) -> Bool {
            passthrough.contains { pattern in
                guard pattern.hasPrefix("*.") else { return host == pattern }
                let domain = pattern.dropFirst(2)
                return host == domain || host.hasSuffix("." + domain)
            }
        }

        /// Whether the tunnel to `target` is terminated under `policy`.
        func intercepts(_ target: ProxyTarget, policy: Policy) -> Bool {
            guard !isPassthrough(target.host) else { return false }
            switch scope {
            case .all: return true
            case .selective: return policy.decidesBeyondOrigin(target.tunnelURL, host: target.host)
            }
        }
    }
#endif
