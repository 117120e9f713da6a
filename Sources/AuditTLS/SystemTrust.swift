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

    /// The system's bundle (empty when there is none) followed by each of `certificates` (PEM), each
    /// on lines of its own.
    public static func bundle(adding certificates: [String], files: [String] = []) -> String {
        var text = bundlePath.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) } ?? ""
        for file in files {
            guard let extra = try? String(contentsOfFile: file, encoding: .utf8) else { continue }
            if !text.isEmpty, !text.hasSuffix("\n") { text += "\n" }
            text += extra
        }
        for certificate in certificates {
            if !text.isEmpty, !text.hasSuffix("\n") { text += "\n" }
            text += certificate
        }
        return text.hasSuffix("\n") ? text : text + "\n"
    }
}
