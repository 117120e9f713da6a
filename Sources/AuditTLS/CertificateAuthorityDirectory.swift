import AuditReport
import Crypto
import Foundation
import X509

/// A folder that keeps a ``CertificateAuthority`` between runs (`--ca-dir DIR`):
///
/// | file | what | mode |
/// |---|---|---|
/// | `ca.pem` | the CA certificate, for clients to trust | 0644 |
/// | `ca-key.pem` | its private key (PKCS #8) | 0600; refused when others can read it |
/// | `bundle.pem` | the system's roots followed by the CA, for tools whose setting replaces their store | 0644 |
///
/// The folder is made (mode 0700) and the CA created on first use.
public struct CertificateAuthorityDirectory: Sendable {
    /// The folder, as an absolute path.
    public let path: String

    /// The CA certificate's file.
    public var certificatePath: String { path + "/ca.pem" }
    /// The private key's file.
    public var privateKeyPath: String { path + "/ca-key.pem" }
    /// The file of the system's roots and the CA.
    public var bundlePath: String { path + "/bundle.pem" }

    /// The folder at `path`, a relative one taken from the current directory (nothing is read or
    /// made yet).
    ///
    /// The paths it hands out are absolute, because they go into other programs' environments
    /// (`audit env`, `audit run`), where a relative one would break as soon as a tool changes
    /// directory.
    public init(path: String) {
        let trimmed = path.hasSuffix("/") && path.count > 1 ? String(path.dropLast()) : path
        self.path =
            trimmed.hasPrefix("/")
            ? trimmed
            : URL(fileURLWithPath: trimmed).standardizedFileURL.path
    }

    /// Whether the folder holds a CA.
    public var exists: Bool { FileManager.default.fileExists(atPath: certificatePath) }

    /// The CA kept here, made (with `bundle.pem`) when the folder holds none.
    ///
    /// - Throws: ``TLSSetupError`` naming the file: a key others can read, a file that does not
    ///   parse, a key that is not the certificate's, a folder that cannot be written.
    public func loadOrCreate(now: Date = Date()) throws(TLSSetupError) -> CertificateAuthority {
        if exists { return try load() }
        return try create(now: now)
    }

    /// Makes a new CA here, replacing any there was, and writes `bundle.pem`.
    @discardableResult
    public func create(now: Date = Date()) throws(TLSSetupError) -> CertificateAuthority {
        let authority = try CertificateAuthority.generate(now: now)
        try makeFolder()
        // The key is written to a private temporary file first, so that it is never readable by
        // others, not even for a moment, and never half-written under its name.
        try Self.write(authority.privateKeyPEM, to: privateKeyPath, mode: 0o600)
        try writePublicFiles(of: authority)
        return authority
    }

    /// Writes `authority`'s public files here, `ca.pem` and `bundle.pem`, making the folder (mode
    /// 0700) if it is missing: all an in-memory CA leaves on disk.
    public func writePublicFiles(of authority: CertificateAuthority) throws(TLSSetupError) {
        try makeFolder()
        let certificate: String
        do { certificate = try authority.certificatePEM } catch { throw .minting("\(error)") }
        try Self.write(certificate, to: certificatePath, mode: 0o644)
        try writeBundle(for: authority)
    }

    private func makeFolder() throws(TLSSetupError) {
        do {
            try FileManager.default.createDirectory(
                atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            throw .file(path: path, reason: "cannot make the CA folder: \(error.localizedDescription)")
        }
    }

    /// Reads the CA kept here.
    public func load() throws(TLSSetupError) -> CertificateAuthority {
        let mode: Int
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: privateKeyPath)
            mode = (attributes[.posixPermissions] as? NSNumber)?.intValue ?? 0o600
        } catch {
            throw .file(path: privateKeyPath, reason: "cannot read the CA's private key: \(error.localizedDescription)")
        }
        if mode & 0o077 != 0 { throw .keyReadableByOthers(path: privateKeyPath, mode: mode) }
        let keyText = try Self.read(privateKeyPath)
        let certificateText = try Self.read(certificatePath)
        let key: P256.Signing.PrivateKey
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: keyText)
        } catch {
            throw .malformed(path: privateKeyPath, reason: "not an ECDSA P-256 private key in PEM (\(error))")
        }
        let certificate: Certificate
        do {
            certificate = try Certificate(pemEncoded: certificateText)
        } catch {
            throw .malformed(path: certificatePath, reason: "not a certificate in PEM (\(error))")
        }
        return try CertificateAuthority(
            certificate: certificate, privateKey: key, certificateName: certificatePath, keyName: privateKeyPath)
    }

    /// Writes `bundle.pem`: the system's roots (``SystemTrust/bundlePath``) followed by the CA.
    public func writeBundle(for authority: CertificateAuthority) throws(TLSSetupError) {
        let certificate: String
        do { certificate = try authority.certificatePEM } catch { throw .minting("\(error)") }
        try Self.write(SystemTrust.bundle(adding: [certificate]), to: bundlePath, mode: 0o644)
    }

    /// Reads a whole text file, or throws naming it and why (``UnreadableFile``: `no such file`, `it
    /// is a folder`, `permission denied`).
    public static func read(_ path: String) throws(TLSSetupError) -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .file(path: path, reason: UnreadableFile.reason(path))
        }
        guard let text = String(data: data, encoding: .utf8) else { throw .file(path: path, reason: "not UTF-8 text") }
        return text
    }

    /// Writes `text` to `path` with `mode`: to a temporary file in the same folder made with that
    /// mode, then renamed to `path`, which replaces what was there at once (a tool reading `path`
    /// meanwhile reads the old file or the new one, never none).
    public static func write(_ text: String, to path: String, mode: Int) throws(TLSSetupError) {
        let temporary = path + ".tmp-\(UUID().uuidString.prefix(8))"
        guard
            FileManager.default.createFile(
                atPath: temporary, contents: Data(text.utf8), attributes: [.posixPermissions: mode])
        else {
            throw .file(path: path, reason: "cannot write")
        }
        do {
            // createFile's mode is filtered by the umask: set it exactly.
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: temporary)
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw .file(path: path, reason: "cannot write: \(error.localizedDescription)")
        }
        guard unsafe rename(temporary, path) == 0 else {
            let reason = unsafe String(cString: strerror(errno))
            try? FileManager.default.removeItem(atPath: temporary)
            throw .file(path: path, reason: "cannot write: \(reason)")
        }
    }
}
