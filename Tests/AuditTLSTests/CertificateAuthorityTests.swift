import AuditTLS
import Foundation
import NIOSSL
import Testing
import X509

/// The interception CA: made safe by default, kept in a folder, and leaves that strict verifiers
/// (openssl's -x509_strict, Python 3.13's VERIFY_X509_STRICT) accept.
@Suite struct CertificateAuthorityTests {
    static func temporaryFolder() -> String {
        let path = NSTemporaryDirectory() + "audit-ca-\(UUID().uuidString.prefix(8))"
        return path
    }

    static func mode(_ path: String) throws -> Int {
        try ((FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? NSNumber)?.intValue) ?? -1
    }

    @Test(
        "a CA folder is made on first use: a private key of mode 0600 in a folder of mode 0700, ca.pem and bundle.pem")
    func madeOnFirstUse() throws {
        let folder = CertificateAuthorityDirectory(path: Self.temporaryFolder() + "/ca")
        defer { try? FileManager.default.removeItem(atPath: folder.path) }
        let authority = try folder.loadOrCreate()
        #expect(try Self.mode(folder.path) == 0o700)
        #expect(try Self.mode(folder.privateKeyPath) == 0o600)
        #expect(try Self.mode(folder.certificatePath) == 0o644)
        let certificatePEM = try authority.certificatePEM
        #expect(try String(contentsOfFile: folder.certificatePath, encoding: .utf8) == certificatePEM)
        let bundle = try String(contentsOfFile: folder.bundlePath, encoding: .utf8)
        #expect(bundle.hasSuffix(certificatePEM))
        if let system = SystemTrust.bundlePath {
            #expect(bundle.hasPrefix(try String(contentsOfFile: system, encoding: .utf8)))
        }
        #expect(authority.certificate.publicKey.description.contains("P256"))
        // Loaded again: the same CA.
        #expect(try folder.loadOrCreate().certificate == authority.certificate)
    }

    @Test("a private key others can read is refused, naming the file and the fix")
    func keyReadableByOthers() throws {
        let folder = CertificateAuthorityDirectory(path: Self.temporaryFolder())
        defer { try? FileManager.default.removeItem(atPath: folder.path) }
        try folder.create()
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: folder.privateKeyPath)
        #expect(throws: TLSSetupError.keyReadableByOthers(path: folder.privateKeyPath, mode: 0o644)) {
            try folder.loadOrCreate()
        }
        let message = TLSSetupError.keyReadableByOthers(path: folder.privateKeyPath, mode: 0o644).description
        #expect(
            message == "\(folder.privateKeyPath): the CA's private key is readable by other users (mode 644); "
                + "run 'chmod 600 \(folder.privateKeyPath)', or make a new CA")
    }

    @Test("a key that is not the certificate's, and a file that is not PEM, are refused naming the file")
    func mismatchedAndMalformed() throws {
        let folder = CertificateAuthorityDirectory(path: Self.temporaryFolder())
        defer { try? FileManager.default.removeItem(atPath: folder.path) }
        try folder.create()
        let other = try CertificateAuthority.generate()
        try other.privateKeyPEM.write(toFile: folder.privateKeyPath, atomically: false, encoding: .utf8)
        #expect(throws: TLSSetupError.keyMismatch(certificate: folder.certificatePath, key: folder.privateKeyPath)) {
            try folder.load()
        }
        try "not a certificate\n".write(toFile: folder.certificatePath, atomically: false, encoding: .utf8)
        #expect {
            try folder.load()
        } throws: { error in
            guard case .malformed(let path, _) = error as? TLSSetupError else { return false }
            return path == folder.certificatePath
        }
    }

    @Test(
        "a leaf passes openssl verify -x509_strict for its host, with SAN, AKI, SKI and days of validity",
        arguments: ["api.example.org", "127.0.0.1", "::1", "2001:db8::7"])
    func strictLeaf(host: String) throws {
        let folder = CertificateAuthorityDirectory(path: Self.temporaryFolder())
        defer { try? FileManager.default.removeItem(atPath: folder.path) }
        let authority = try folder.create()
        let leaves = try LeafCertificates(authority: authority)
        let leaf = try leaves.certificate(for: host)
        let leafPath = folder.path + "/leaf.pem"
        try leaf.serializeAsPEM().pemString.write(toFile: leafPath, atomically: false, encoding: .utf8)
        let isAddress = host.contains(":") || host.allSatisfy { $0.isNumber || $0 == "." }
        let result = try Self.run(
            "/usr/bin/openssl",
            ["verify", "-x509_strict", "-purpose", "sslserver", "-CAfile", folder.certificatePath]
                + (isAddress ? ["-verify_ip", host] : ["-verify_hostname", host]) + [leafPath])
        #expect(result.status == 0, "\(result.output)")
        #expect(
            try leaf.extensions.authorityKeyIdentifier?.keyIdentifier
                == authority.certificate.extensions.subjectKeyIdentifier?.keyIdentifier)
        #expect(try leaf.extensions.subjectKeyIdentifier != nil)
        let days = leaf.notValidAfter.timeIntervalSince(leaf.notValidBefore) / 86_400
        #expect(days > 1 && days <= 31)
        // Another host's name does not verify.
        let wrong = try Self.run(
            "/usr/bin/openssl",
            [
                "verify", "-x509_strict", "-CAfile", folder.certificatePath, "-verify_hostname", "other.example",
                leafPath,
            ])
        #expect(wrong.status != 0)
    }

    @Test("a certificate that did not verify is explained: not yet valid, expired, self-signed, or by its issuer")
    func diagnosis() throws {
        let authority = try CertificateAuthority.generate()
        let leaf = try LeafCertificates(authority: authority).certificate(for: "api.example.org")
        let early = leaf.notValidBefore - 60
        #expect(
            CertificateDiagnosis.describe(leaf, authority: "api.example.org:443", now: early).hasPrefix(
                "the certificate of api.example.org:443 is not valid before "))
        #expect(
            CertificateDiagnosis.describe(leaf, authority: "a:443", now: leaf.notValidAfter + 1).hasPrefix(
                "the certificate of a:443 expired on "))
        #expect(
            CertificateDiagnosis.describe(authority.certificate, authority: "a:443", now: Date()).hasPrefix(
                "the certificate of a:443 is self-signed"))
        #expect(
            CertificateDiagnosis.describe(leaf, authority: "a:443", now: Date())
                == "the certificate of a:443 is issued by '\(authority.certificate.subject)', which no trusted root "
                + "vouches for; --upstream-ca FILE adds one")
    }

    @Test("the cache keeps at most its capacity of hosts, least recently used out first")
    func bounded() throws {
        let leaves = try LeafCertificates(authority: CertificateAuthority.generate(), capacity: 8)
        for index in 0..<40 { _ = try leaves.context(for: "host\(index).test") }
        #expect(leaves.count <= 8)
        #expect(leaves.mintedCount == 40)
        _ = try leaves.context(for: "host39.test")
        #expect(leaves.mintedCount == 40)
    }

    @Test("concurrent first tunnels to one host mint its leaf once")
    func mintOnce() async throws {
        let leaves = try LeafCertificates(authority: CertificateAuthority.generate())
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<16 { group.addTask { _ = try? leaves.context(for: "once.test") } }
        }
        #expect(leaves.mintedCount == 1)
    }

    static func run(_ tool: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: tool)
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}
