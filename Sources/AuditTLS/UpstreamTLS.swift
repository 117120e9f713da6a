import NIOSSL

/// The client side of intercepted tunnels: how the proxy verifies the servers it talks to.
public enum UpstreamTLS {
    /// A client TLS context that verifies servers fully (chain and name) against the system's
    /// roots plus the PEM certificates in `additionalRootFiles` (`--upstream-ca FILE`), offering
    /// ALPN `http/1.1` only, TLS 1.2 at least.
    ///
    /// - Throws: ``TLSSetupError`` naming a file that cannot be read or holds no certificate.
    public static func clientContext(additionalRootFiles: [String] = []) throws(TLSSetupError) -> NIOSSLContext {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .fullVerification
        configuration.trustRoots = .default
        configuration.applicationProtocols = ["http/1.1"]
        configuration.minimumTLSVersion = .tlsv12
        for file in additionalRootFiles {
            // Read first, so that a file that is missing or unreadable is told from one that is not PEM.
            let text = try CertificateAuthorityDirectory.read(file)
            let certificates: [NIOSSLCertificate]
            do {
                certificates = try NIOSSLCertificate.fromPEMBytes(Array(text.utf8))
            } catch {
                throw .malformed(path: file, reason: "no certificate in PEM here (\(error))")
            }
            guard !certificates.isEmpty else { throw .malformed(path: file, reason: "no certificate in PEM here") }
            configuration.additionalTrustRoots.append(.certificates(certificates))
        }
        do {
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw .malformed(path: additionalRootFiles.joined(separator: ", "), reason: "\(error)")
        }
    }
}
