import AuditProxy
import AuditTLS
import Testing

/// `--tls-passthrough` patterns: read in the canonical form a CONNECT's host is compared in, and
/// refused when they name no host.
@Suite struct PassthroughHostTests {
    @Test(
        "a passthrough pattern is read in canonical form, as a CONNECT's host is",
        arguments: [
            ("example.org", "example.org"),
            ("EXAMPLE.Org.", "example.org"),
            ("*.Example.ORG", "*.example.org"),
            ("bücher.example", "xn--bcher-kva.example"),
            ("2130706433", "127.0.0.1"),
            ("0x7f.1", "127.0.0.1"),
            ("::1", "::1"),
            ("[0:0::1]", "::1"),
            ("pinned", "pinned"),
        ])
    func canonicalForm(_ pattern: String, canonical: String) throws {
        #expect(try TLSInterceptionSettings.canonicalPassthrough(pattern) == canonical)
    }

    @Test(
        "a pattern with a scheme, port, path, user or stray wildcard is refused, named in the error",
        arguments: [
            "https://example.org", "example.org:443", "[::1]:443", "example.org/path", "user@example.org", "*",
            "*.", "", "a*.example.org", "exa mple.org", "[example.org]",
        ])
    func refused(_ pattern: String) {
        #expect(throws: TLSSetupError.passthroughPattern(pattern)) {
            try TLSInterceptionSettings.canonicalPassthrough(pattern)
        }
    }

    @Test("a passthrough host written in any spelling matches the CONNECT host it names")
    func matchesCanonicalHost() throws {
        let settings = try TLSInterceptionSettings(
            authority: CertificateAuthority.generate(), passthrough: ["2130706433", "*.Pinned.EXAMPLE."])
        #expect(settings.isPassthrough("127.0.0.1"))
        #expect(settings.isPassthrough("pinned.example"))
        #expect(settings.isPassthrough("api.pinned.example"))
        #expect(!settings.isPassthrough("unpinned.example"))
        #expect(!settings.isPassthrough("127.0.0.2"))
    }
}
