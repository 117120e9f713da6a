import Crypto
import Foundation
import SwiftASN1
import X509

/// The certificate authority that signs the certificates an intercepting proxy shows its clients.
///
/// An ECDSA P-256 key and a self-signed CA certificate limited to signing server certificates for
/// one level below it (path length 0). Made in memory by ``generate(now:)``, or read from a CA
/// folder by ``CertificateAuthorityDirectory``.
///
/// ```swift
/// let authority = try CertificateAuthority.generate()
/// let leaf = try authority.issueLeaf(for: "example.org", publicKey: key.publicKey)
/// ```
public struct CertificateAuthority: Sendable {
    /// The CA certificate clients trust.
    public let certificate: Certificate
    let privateKey: P256.Signing.PrivateKey
    /// The key identifier leaves name as their authority (AKI).
    let keyIdentifier: ArraySlice<UInt8>

    /// How long a CA made here is valid.
    public static let validity: TimeInterval = 3 * 365 * 86_400

    /// The CA certificate in PEM, ending with a newline.
    public var certificatePEM: String {
        get throws { try certificate.serializeAsPEM().pemString + "\n" }
    }

    /// The SHA-256 of the CA's SubjectPublicKeyInfo, in base64: what Chromium's
    /// `--ignore-certificate-errors-spki-list` and HPKP-style pins name.
    public var publicKeySHA256: String {
        Data(SHA256.hash(data: privateKey.publicKey.derRepresentation)).base64EncodedString()
    }

    /// The SHA-256 fingerprint of the CA certificate, as `AB:CD:…`.
    public var fingerprintSHA256: String {
        get throws {
            SHA256.hash(data: try certificate.derBytes).map { byte in
                let hex = String(byte, radix: 16, uppercase: true)
                return byte < 16 ? "0" + hex : hex
            }.joined(separator: ":")
        }
    }

    /// The private key in PEM (PKCS #8).
    public var privateKeyPEM: String { privateKey.pemRepresentation }

    /// A CA from a certificate and the private key that signed it.
    ///
    /// - Throws: ``TLSSetupError/keyMismatch(certificate:key:)`` when the key is not the
    ///   certificate's (the names in the error are `certificateName` and `keyName`).
    public init(
        certificate: Certificate, privateKey: P256.Signing.PrivateKey, certificateName: String = "certificate",
        keyName: String = "key"
    ) throws(TLSSetupError) {
        guard certificate.publicKey == Certificate.PublicKey(privateKey.publicKey) else {
            throw .keyMismatch(certificate: certificateName, key: keyName)
        }
        self.certificate = certificate
        self.privateKey = privateKey
        let identifier = try? certificate.extensions.subjectKeyIdentifier?.keyIdentifier
        keyIdentifier = identifier ?? SubjectKeyIdentifier(hash: certificate.publicKey).keyIdentifier
    }

    /// A new CA with a fresh key, valid from an hour before `now` (for clocks behind) for
    /// ``validity``.
    public static func generate(now: Date = Date()) throws(TLSSetupError) -> CertificateAuthority {
        let key = P256.Signing.PrivateKey()
        let publicKey = Certificate.PublicKey(key.publicKey)
        do {
            let day = ISO8601DateFormatter.string(from: now, timeZone: .gmt, formatOptions: [.withFullDate])
            let name = try DistinguishedName {
                OrganizationName("RequestAudit")
                CommonName("RequestAudit interception CA \(day)")
            }
            let extensions = try Certificate.Extensions {
                Critical(BasicConstraints.isCertificateAuthority(maxPathLength: 0))
                Critical(KeyUsage(digitalSignature: true, keyCertSign: true, cRLSign: true))
                SubjectKeyIdentifier(hash: publicKey)
            }
            let certificate = try Certificate(
                version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: publicKey,
                notValidBefore: now - 3_600, notValidAfter: now + validity, issuer: name, subject: name,
                signatureAlgorithm: .ecdsaWithSHA256, extensions: extensions, issuerPrivateKey: .init(key))
            return try CertificateAuthority(certificate: certificate, privateKey: key)
        } catch let error as TLSSetupError {
            throw error
        } catch {
            throw .minting("\(error)")
        }
    }

    /// A server certificate for `host` (a DNS name, or an IPv4 or IPv6 address without brackets)
    /// with `publicKey`, signed by this CA: SAN, AKI and SKI as strict verifiers want them, for
    /// `serverAuth` only, valid from an hour before `now` for `validity` (days, not years).
    public func issueLeaf(
        for host: String, publicKey: P256.Signing.PublicKey, now: Date = Date(), validity: TimeInterval
    ) throws(TLSSetupError) -> Certificate {
        let leafKey = Certificate.PublicKey(publicKey)
        do {
            let subjectName = String(host.prefix(64))
            let subject = try DistinguishedName {
                OrganizationName("RequestAudit")
                CommonName(subjectName)
            }
            let alternativeName: GeneralName =
                IPAddress.bytes(of: host).map { .ipAddress(ASN1OctetString(contentBytes: $0[...])) }
                ?? .dnsName(host)
            let extensions = try Certificate.Extensions {
                Critical(BasicConstraints.notCertificateAuthority)
                Critical(KeyUsage(digitalSignature: true))
                try ExtendedKeyUsage([.serverAuth])
                SubjectAlternativeNames([alternativeName])
                AuthorityKeyIdentifier(keyIdentifier: keyIdentifier)
                SubjectKeyIdentifier(hash: leafKey)
            }
            return try Certificate(
                version: .v3, serialNumber: Certificate.SerialNumber(), publicKey: leafKey,
                notValidBefore: now - 3_600, notValidAfter: now + validity, issuer: certificate.subject,
                subject: subject, signatureAlgorithm: .ecdsaWithSHA256, extensions: extensions,
                issuerPrivateKey: .init(privateKey))
        } catch {
            throw .minting("for \(host): \(error)")
        }
    }
}

/// IP addresses as canonical hosts write them.
public enum IPAddress {
    /// The bytes of `host` when it is an IPv4 address in four decimal parts or an IPv6 address in
    /// hexadecimal groups (as canonical hosts are written), else nil.
    public static func bytes(of host: String) -> [UInt8]? {
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        if parts.count == 4 {
            let bytes = parts.compactMap { UInt8($0) }
            return bytes.count == 4 ? bytes : nil
        }
        guard host.utf8.contains(UInt8(ascii: ":")) else { return nil }
        let halves = host.components(separatedBy: "::")
        guard halves.count <= 2 else { return nil }
        func groups(_ text: String) -> [UInt16]? {
            if text.isEmpty { return [] }
            let values = text.split(separator: ":", omittingEmptySubsequences: false).map { UInt16($0, radix: 16) }
            return values.contains(nil) ? nil : values.compactMap { $0 }
        }
        guard let head = groups(halves[0]), let tail = halves.count == 2 ? groups(halves[1]) : [] else { return nil }
        let missing = 8 - head.count - tail.count
        guard halves.count == 2 ? missing >= 1 : missing == 0 else { return nil }
        let all = head + Array(repeating: 0, count: halves.count == 2 ? missing : 0) + tail
        return all.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] }
    }
}

extension Certificate {
    /// The certificate's DER encoding.
    var derBytes: [UInt8] {
        get throws {
            var serializer = DER.Serializer()
            try serializer.serialize(self)
            return serializer.serializedBytes
        }
    }
}
