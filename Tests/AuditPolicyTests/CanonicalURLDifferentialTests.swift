import Foundation
import Testing

@testable import AuditPolicy

/// RequestAudit's canonical URLs against the WHATWG URL Standard's reference parser, ada-url
/// (`Tests/oracles/whatwg_canonical.py` adds the documented additions to ada's result on its own).
@Suite struct CanonicalURLDifferentialTests {
    /// Spellings of blocked resources that real clients reach the server with.
    static let spellings = [
        "http://rivalshop.com./", "http://WWW.RivalShop.com./", "http://api.allowed.com./delete",
        "http://allowed.com/%61dmin", "http://allowed.com/adm%69n", "http://allowed.com//admin",
        "http://allowed.com/./admin", "http://allowed.com/x/../admin", "http://allowed.com/%2e/admin",
        "http://allowed.com/x/%2e%2e/admin", "http://allowed.com/?debug=%31", "http://allowed.com/?de%62ug=1",
        "http://2131298311/", "http://0x7f.9.8.7/", "http://0177.9.8.7/", "http://127.591879/",
        "http://[::ffff:127.9.8.7]/", "http://u:p@rivalshop.com/", "http://allowed.com@rivalshop.com/",
        "http://%72ivalshop.com/", "http://rivalshop%2ecom/", "http:\\\\rivalshop.com\\", "http://rival\tshop.com/",
        "http://rival\nshop.com/", "http://\u{FF52}ivalshop.com/", "http://rivalshop\u{3002}com/",
        "http://rival\u{AD}shop.com/", "HTTP://RIVALSHOP.COM:80/", "http:rivalshop.com", "http:/\\rivalshop.com",
        "https://[2001:db8:0:0:0:0:0:1]/", "https://[2001:DB8::0:1]:443/x", "http://0x7f000001/",
        "http://017700000001/",
        "http://127.1/", "http://127.0.1/", "http://0/", "http://4294967295/", "http://4294967296/",
        "http://1.2.3.4.5/", "http://1.2.3.08/", "http://a.b.c.0x/", "http://[::1]x/", "http://a:b@/",
        "http://a.com:65536/", "http://a.com:0080/", "http://xn--a.com/", "http://xn--mnchen-3ya.de/",
        "http://M\u{FC}nchen.de/stra\u{DF}e", "http://a.com/\u{1F600}?\u{1F600}#x", "http://a.com/a b?c d",
        "http://xn--mnchen\u{E9}.de/", "http://xn--a.\u{E9}/", "http://ab--\u{E9}/", "http://xn--ls8h.\u{E9}/",
        "http://rival\u{200B}shop.com/", "http://rival\u{200C}shop.com/", "http://rival\u{200D}shop.com/",
        "http://rival\u{2060}shop.com/", "http://rival\u{FEFF}shop.com/", "http://rival\u{034F}shop.com/",
        "http://rival\u{2028}shop.com/", "http://rival\u{0338}shop.com/", "http://\u{0915}\u{094D}\u{200D}\u{0937}.in/",
    ]

    /// Mutations of `url` that real spellings are made of, chosen by `random`.
    static func mutated(_ url: String, using random: inout some RandomNumberGenerator) -> String {
        var text = Array(url.unicodeScalars)
        let insertions = [
            "/./", "/../", "//", "/%2e/", "/%2E%2e/", "\\", "%61", "%7e", "%2f", "%41", "\t", "\n", ".", "..", "@",
            ":", ":80", ":443", ":0", "%", "%zz", "?", "#", "'", "\"", "<", " ", "\u{FF41}", "\u{3002}", "\u{AD}",
            "\u{E9}", "xn--", "[", "]", "0x", "0", "%00", "%2E", "%252e", "\u{200B}", "\u{200D}", "\u{FEFF}",
            "\u{FF0E}", "\u{2488}", "\u{1D400}",
        ]
        for _ in 0..<Int.random(in: 1...3, using: &random) {
            guard !text.isEmpty else { break }
            let position = Int.random(in: 0...text.count, using: &random)
            switch Int.random(in: 0..<4, using: &random) {
            case 0:
                text.insert(contentsOf: (insertions.randomElement(using: &random) ?? "").unicodeScalars, at: position)
            case 1:
                if position < text.count { text.remove(at: position) }
            case 2:
                if position < text.count, text[position].isASCII,
                    let letter = Character(text[position]).uppercased().unicodeScalars.first
                {
                    text[position] = letter
                }
            default:
                if position < text.count, text[position].value < 0x80 {
                    let hex = String(text[position].value, radix: 16)
                    text.replaceSubrange(
                        position..<position + 1, with: ("%" + (hex.count == 1 ? "0" : "") + hex).unicodeScalars)
                }
            }
        }
        var view = String.UnicodeScalarView()
        view.append(contentsOf: text)
        return String(view)
    }

    /// The benchmark corpus when `../shared/bench-data` (or `$BENCH_DATA`) is there.
    static func benchmarkURLs() -> [String] {
        let folder =
            ProcessInfo.processInfo.environment["BENCH_DATA"]
            ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
                "../../../shared/bench-data"
            ).path
        guard let text = try? String(contentsOfFile: folder + "/urls-bench.txt", encoding: .utf8) else { return [] }
        return text.split(separator: "\n").map(String.init)
    }

    /// What the oracle says of each of `urls`: the canonical URL, nil for invalid, "non-special".
    static func oracle(_ urls: [String]) throws -> [String?] {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("../oracles/whatwg_canonical.py").standardized.path
        let input =
            try urls.map { String(decoding: try JSONEncoder().encode($0), as: UTF8.self) }.joined(separator: "\n")
            + "\n"
        let inputFile = FileManager.default.temporaryDirectory.appendingPathComponent(
            "oracle-\(UUID().uuidString).jsonl")
        try input.write(to: inputFile, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: inputFile) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script]
        process.standardInput = try FileHandle(forReadingFrom: inputFile)
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "the oracle needs python3 with ada-url (pip install ada-url)")
        return try data.split(separator: UInt8(ascii: "\n")).map {
            try JSONDecoder().decode(String?.self, from: Data($0))
        }
    }

    @Test("every URL is canonicalized as ada-url plus the documented additions: corpus, spellings and mutations")
    func agreesWithReference() throws {
        var random = IndexDifferentialTests.Generator(state: 20_261_127)
        let corpus = Self.benchmarkURLs()
        let bases = Self.spellings + corpus.prefix(2_000) + ["http://a.test/x/y?z=1#f", "https://[::1]:8443/p?q"]
        let mutations = (0..<30_000).map { index in Self.mutated(bases[index % bases.count], using: &random) }
        let urls = Self.spellings + corpus + mutations
        let expected = try Self.oracle(urls)
        try #require(expected.count == urls.count)
        var differences: [String] = []
        var compared = 0
        for (url, oracle) in zip(urls, expected) where oracle != "non-special" {
            let parts = URLParts(url)
            // Text without a scheme is not a URL a client can send (the standard needs a base to
            // resolve it); it is matched as written.
            guard parts.schemeLength > 0 else { continue }
            compared += 1
            let ours: String? = parts.rejection == nil ? parts.normalized : nil
            if ours != oracle, differences.count < 20 {
                differences.append(
                    "\(url.debugDescription): ours \(ours.debugDescription), reference \(oracle.debugDescription)")
            }
        }
        #expect(compared > urls.count / 2)
        #expect(differences.isEmpty, "\(differences.joined(separator: "\n"))")
    }
}
