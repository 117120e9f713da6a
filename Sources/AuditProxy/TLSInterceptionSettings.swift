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
        /// `*.example.org` for its subdomains and itself; case-insensitive.
        public var passthrough: [String]
        /// The certificates shown to clients, minted per host by the CA.
        public let leaves: LeafCertificates
        /// How servers are verified: the system's roots plus `--upstream-ca` files.
        public let upstreamContext: NIOSSLContext

        /// Interception with certificates from `authority`, servers verified against the system's roots
        /// and the PEM certificates of `upstreamRootFiles`.
        ///
        /// - Throws: ``TLSSetupError`` naming a roots file that cannot be used.
        public init(
            authority: CertificateAuthority, scope: Scope = .selective, passthrough: [String] = [],
            upstreamRootFiles: [String] = [], leafCapacity: Int = 1_024
        ) throws(TLSSetupError) {
            self.scope = scope
            // Written as hosts are canonical: lower case, no trailing dot, IPv6 without brackets.
            self.passthrough = passthrough.map { pattern in
                var host = pattern.lowercased()
                if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
                if host.hasSuffix("."), host.count > 1 { host.removeLast() }
                return host
            }
            leaves = try LeafCertificates(authority: authority, capacity: leafCapacity)
            upstreamContext = try UpstreamTLS.clientContext(additionalRootFiles: upstreamRootFiles)
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
