/// Why TLS interception cannot start: a CA that cannot be read, made or trusted, or a file of roots
/// that cannot be used. Each case names the file.
public enum TLSSetupError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A file or folder cannot be read or written.
    case file(path: String, reason: String)
    /// The CA's private key can be read by other users than its owner.
    case keyReadableByOthers(path: String, mode: Int)
    /// A PEM file holds no certificate or key of the kind expected, or one that does not parse.
    case malformed(path: String, reason: String)
    /// The CA's certificate and private key do not belong together.
    case keyMismatch(certificate: String, key: String)
    /// A certificate or key could not be made.
    case minting(String)
    /// A passthrough host pattern that names no host: a URL, a port, a path, or no host at all.
    case passthroughPattern(String)

    /// The message a user reads, naming the file.
    public var description: String {
        switch self {
        case .file(let path, let reason):
            return "\(path): \(reason)"
        case .keyReadableByOthers(let path, let mode):
            return "\(path): the CA's private key is readable by other users (mode \(String(mode, radix: 8))); "
                + "run 'chmod 600 \(path)', or make a new CA"
        case .malformed(let path, let reason):
            return "\(path): \(reason)"
        case .keyMismatch(let certificate, let key):
            return "\(key): this private key does not belong to the certificate in \(certificate)"
        case .minting(let reason):
            return "cannot make a certificate: \(reason)"
        case .passthroughPattern(let pattern):
            return "'\(pattern)' is not a passthrough host: write a host name (example.org), *.example.org or an "
                + "IP address, without a scheme, port or path"
        }
    }
}
