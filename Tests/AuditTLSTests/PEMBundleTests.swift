import AuditTLS
import Foundation
import Testing

/// Trust bundles gathered from texts that overlap: each certificate once, in the order first seen.
@Suite struct PEMBundleTests {
    static func block(_ body: String, type: String = "CERTIFICATE") -> String {
        "-----BEGIN \(type)-----\n\(body)\n-----END \(type)-----\n"
    }

    @Test("a certificate met again in another text, or the same, is kept once, where it was first met")
    func keptOnce() {
        var bundle = PEMBundle()
        bundle.add(Self.block("AAAA") + Self.block("BBBB"))
        bundle.add(Self.block("BBBB") + Self.block("CCCC"))
        bundle.add(Self.block("AAAA"))
        #expect(bundle.text == Self.block("AAAA") + Self.block("BBBB") + Self.block("CCCC"))
        #expect(bundle.count == 3)
    }

    @Test("line endings and indentation do not make a certificate another; blank lines inside a block do not either")
    func sameWhateverTheLayout() {
        var bundle = PEMBundle()
        bundle.add(Self.block("AAAA\nBBBB"))
        bundle.add("-----BEGIN CERTIFICATE-----\r\n  AAAA\r\n\r\nBBBB  \r\n-----END CERTIFICATE-----\r\n")
        #expect(bundle.text == Self.block("AAAA\nBBBB"))
    }

    @Test("what lies between blocks is left out; a block of another type is another block; a cut block is dropped")
    func onlyWholeBlocks() {
        var bundle = PEMBundle()
        bundle.add(
            "# Issuer: CN=Example Root\n" + Self.block("AAAA") + "\n\nnot pem\n" + Self.block("AAAA", type: "X509 CRL")
                + "-----BEGIN CERTIFICATE-----\nCCCC\n")
        #expect(bundle.text == Self.block("AAAA") + Self.block("AAAA", type: "X509 CRL"))
    }

    @Test("a file that cannot be read adds nothing, and says so")
    func unreadableFile() {
        var bundle = PEMBundle()
        let added = bundle.add(contentsOf: "/nonexistent/\(UUID().uuidString).pem")
        #expect(!added)
        #expect(bundle.text.isEmpty)
    }

    @Test("the system's roots with a bundle that already holds them and the CA: each root once, then the CA")
    func systemBundle() throws {
        let system = try #require(SystemTrust.bundlePath)
        let folder = NSTemporaryDirectory() + "pem-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let ca = Self.block("Q0EgY2VydGlmaWNhdGU=")
        let first = SystemTrust.bundle(adding: [ca], files: [system])
        try first.write(toFile: folder + "/env-bundle.pem", atomically: true, encoding: .utf8)
        let again = SystemTrust.bundle(adding: [ca], files: [folder + "/env-bundle.pem"])
        var roots = PEMBundle()
        roots.add(contentsOf: system)
        #expect(first == roots.text + ca)
        #expect(again == first)
    }
}
