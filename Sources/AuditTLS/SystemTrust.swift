import Foundation

/// The system's trusted roots, as a PEM bundle file.
public enum SystemTrust {
    /// Where distributions keep the bundle of trusted roots, most common first.
    static let candidatePaths = [
        "/etc/ssl/certs/ca-certificates.crt",  // Debian, Ubuntu, Arch, Gentoo
        "/etc/pki/tls/certs/ca-bundle.crt",  // Fedora, RHEL
        "/etc/ssl/ca-bundle.pem",  // openSUSE
        "/etc/ssl/cert.pem",  // Alpine, macOS
        "/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",
    ]

    /// The system's bundle of trusted roots, or nil when none of the usual places has one.
    public static var bundlePath: String? {
        candidatePaths.first { FileManager.default.isReadableFile(atPath: $0) }
    }

    /// The system's roots (none when it has no bundle), then those of the PEM `files` (unreadable
    /// ones left out), then `certificates` (PEM): each certificate once, on lines of its own.
    public static func bundle(adding certificates: [String], files: [String] = []) -> String {
        var bundle = PEMBundle()
        for file in (bundlePath.map { [$0] } ?? []) + files { bundle.add(contentsOf: file) }
        for certificate in certificates { bundle.add(certificate) }
        return bundle.text
    }
}
