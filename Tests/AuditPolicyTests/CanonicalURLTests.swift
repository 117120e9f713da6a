import Testing

@testable import AuditPolicy

@Suite struct CanonicalURLTests {
    /// Spellings of one resource and the canonical form every rule sees.
    static let cases: [(String, String)] = [
        ("HTTPS://Shop.Example.COM:443/Cart?ID=1#top", "https://shop.example.com/Cart?ID=1"),
        ("http://EXAMPLE.com:80", "http://example.com/"),
        ("http://example.com:8080/A", "http://example.com:8080/A"),
        ("https://example.com:80/", "https://example.com:80/"),
        ("https://example.com:0443/", "https://example.com/"),
        ("https://User:PW@Example.com/x", "https://example.com/x"),
        ("http://[2001:DB8:0:0::1]:80/p", "http://[2001:db8::1]/p"),
        ("https://a.test/%7Euser/../x?q=A%20B", "https://a.test/x?q=A%20B"),
        ("https://a.test?x=1#f", "https://a.test/?x=1"),
        ("not a url#frag", "not a url"),
        ("https://a.test:/x", "https://a.test/x"),
        ("WSS://A.test:443/s", "wss://a.test/s"),
        ("ftp://Files.test:21/f", "ftp://files.test/f"),
        ("https://B\u{DC}CHER.Example:443/Pfad", "https://xn--bcher-kva.example/Pfad"),
        ("h://X/Y#z", "h://x/Y"),
        ("http://rivalshop.com./", "http://rivalshop.com/"),
        ("http://WWW.RivalShop.com./", "http://www.rivalshop.com/"),
        ("http://allowed.com/%61dmin", "http://allowed.com/admin"),
        ("http://allowed.com/adm%69n", "http://allowed.com/admin"),
        ("http://allowed.com//admin", "http://allowed.com/admin"),
        ("http://allowed.com/./admin", "http://allowed.com/admin"),
        ("http://allowed.com/x/../admin", "http://allowed.com/admin"),
        ("http://allowed.com/%2e/admin", "http://allowed.com/admin"),
        ("http://allowed.com/x/%2E%2e/admin", "http://allowed.com/admin"),
        ("http://allowed.com/a/b/..", "http://allowed.com/a/"),
        ("http://allowed.com/a%2fb", "http://allowed.com/a%2Fb"),
        ("http://allowed.com/?debug=%31", "http://allowed.com/?debug=1"),
        ("http://allowed.com/?de%62ug=1", "http://allowed.com/?debug=1"),
        ("http://allowed.com/?a=%2f&b='x'", "http://allowed.com/?a=%2F&b=%27x%27"),
        ("http://2131298311/", "http://127.9.8.7/"),
        ("http://0x7f.9.8.7/", "http://127.9.8.7/"),
        ("http://0177.9.8.7/", "http://127.9.8.7/"),
        ("http://127.591879/", "http://127.9.8.7/"),
        ("http://127.9.2055/", "http://127.9.8.7/"),
        ("http://0x7F090807/", "http://127.9.8.7/"),
        ("http://[::ffff:127.9.8.7]/", "http://127.9.8.7/"),
        ("http://[::FFFF:7f09:807]:8080/", "http://127.9.8.7:8080/"),
        ("http://u:p@rivalshop.com/", "http://rivalshop.com/"),
        ("http://allowed.com@rivalshop.com/", "http://rivalshop.com/"),
        ("http://%72ivalshop.com/", "http://rivalshop.com/"),
        ("http://rivalshop%2ecom/", "http://rivalshop.com/"),
        ("http:\\\\rivalshop.com\\", "http://rivalshop.com/"),
        ("http:rivalshop.com", "http://rivalshop.com/"),
        ("http:///rivalshop.com/", "http://rivalshop.com/"),
        ("ht\ttp://rival\nshop.com/\r", "http://rivalshop.com/"),
        ("  http://rivalshop.com/ ", "http://rivalshop.com/"),
        ("http://\u{FF52}ivalshop\u{3002}com/", "http://rivalshop.com/"),
        ("http://rival\u{AD}shop.com/", "http://rivalshop.com/"),
        ("http://RIVALSHOP.COM/", "http://rivalshop.com/"),
        ("http://xn--mnchen-3ya.de/", "http://xn--mnchen-3ya.de/"),
        ("http://M\u{FC}nchen.de/", "http://xn--mnchen-3ya.de/"),
        ("http://a.test/caf\u{E9} x", "http://a.test/caf%C3%A9%20x"),
        ("http://a.test/{x}?{y}", "http://a.test/%7Bx%7D?{y}"),
    ]

    @Test("a URL is matched in its canonical form", arguments: cases)
    func canonicalizes(url: String, expected: String) {
        #expect(AuditRequest(url: url).normalizedURL == expected)
    }

    /// URLs the standard calls invalid, and why.
    static let invalid: [(String, URLRejection)] = [
        ("http://a.com:99999/", .invalidPort("99999")),
        ("http://a.com:8o/", .invalidPort("8o")),
        ("http://1.2.3.256/", .invalidIPv4("1.2.3.256")),
        ("http://09.1/", .invalidIPv4("09.1")),
        ("http://1.2.3.4.5/", .invalidIPv4("1.2.3.4.5")),
        ("http://[::1/", .invalidIPv6("[::1")),
        ("http://[1:2:3:4:5:6:7:8:9]/", .invalidIPv6("[1:2:3:4:5:6:7:8:9]")),
        ("http://exa mple.com/", .forbiddenHostCharacter(" ")),
        ("http://a%20b.com/", .forbiddenHostCharacter(" ")),
        ("http://a<b.com/", .forbiddenHostCharacter("<")),
        ("http://a%25b.com/", .forbiddenHostCharacter("%")),
        ("http:///", .emptyHost),
        ("http://user@/", .emptyHost),
        ("http://%ff.com/", .hostNotUTF8),
        ("http://a\u{FFFF}b.com/", .invalidDomain("a\u{FFFF}b.com")),
    ]

    @Test("an invalid URL is refused, naming why", arguments: invalid)
    func refusesInvalid(url: String, rejection: URLRejection) throws {
        #expect(throws: rejection) { try CanonicalURL(url) }
        let policy = try Policy(parsing: "[allow]\nall .\n", file: "all.rules")
        let verdict = policy.evaluate(AuditRequest(url: url))
        #expect(verdict.action == .block)
        #expect(verdict.urlRejection == rejection)
        #expect(policy.evaluateEveryRule(AuditRequest(url: url)).urlRejection == rejection)
    }

    @Test("canonicalizing its canonical form changes nothing", arguments: cases)
    func idempotent(url: String, expected: String) throws {
        #expect(try CanonicalURL(expected).string == expected)
        #expect(try CanonicalURL(expected).changes.isEmpty || !expected.hasPrefix("http"))
    }

    /// URLs the evaluation may match as sent (`true`) or must canonicalize first (`false`).
    static let matchedAsSent: [(String, Bool)] = [
        ("https://shop.example.com/Cart?ID=1", true),
        ("http://a-b.test/%7Euser/X", false),
        ("http://a-b.test/a%2Fb", true),
        ("http://a-b.test/a%2fb", false),
        ("https://a.test/?Q=A", true),
        ("https://a.test?Q=A", false),
        ("https://a.test", false),
        ("https://a.test/?next=HTTP://B.TEST/", true),
        ("https://a.test/x/.y/z..", true),
        ("https://a.test/x/./y", false),
        ("https://a.test/x/..", false),
        ("https://a.test/x//y", false),
        ("https://a.test/x?y=//z/../", true),
        ("HTTPS://a.test/", false),
        ("https://A.test/", false),
        ("https://a.test:443/", false),
        ("https://u@a.test/", false),
        ("http://[::1]/", false),
        ("http://10.0.0.1/", true),
        ("http://010.0.0.1/", false),
        ("http://10.0.1/", false),
        ("http://256.0.0.1/", false),
        ("http://a.test:8080/", true),
        ("http://a.test:080/", false),
        ("http://a.test:80/", false),
        ("https://a.test:80/", true),
        ("http://a.test:8080", false),
        ("http://a.test/%u0041", true),
        ("http://a.test/.../x", true),
        ("http://a.test/..x", true),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa/./b", false),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa//b", false),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa?q='", false),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa?q={}//./", true),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaa%2faaaaaaaaaaaaaaaaaaaaaaaa", false),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaa%2Faaaaaaaaaaaaaaaaaaaaaaaa", true),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaa%41aaaaaaaaaaaaaaaaaaaaaaaa", false),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaa%7Eaaaaaaaaaaaaaaaaaaaaaaaa", false),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaa%7Faaaaaaaaaaaaaaaaaaaaaaaa", true),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaa%5Faaaaaaaaaaaaaaaaaaaaaaaa", false),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaa%5Baaaaaaaaaaaaaaaaaaaaaaaa", true),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaa%2Daaaaaaaaaaaaaaaaaaaaaaaa", false),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaa%2Caaaaaaaaaaaaaaaaaaaaaaaa", true),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaa%3Aaaaaaaaaaaaaaaaaaaaaaaaa", true),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaa%40aaaaaaaaaaaaaaaaaaaaaaaa", true),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaa%60aaaaaaaaaaaaaaaaaaaaaaaa", true),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaa%7Baaaaaaaaaaaaaaaaaaaaaaaa", true),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaa%30aaaaaaaaaaaaaaaaaaaaaaaa", false),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaa%6Faaaaaaaaaaaaaaaaaaaaaaaa", false),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaa%7Aaaaaaaaaaaaaaaaaaaaaaaaa", false),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaa%5Aaaaaaaaaaaaaaaaaaaaaaaaa", false),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaa%50aaaaaaaaaaaaaaaaaaaaaaaa", false),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaa%4Gaaaaaaaaaaaaaaaaaaaaaaaa", true),
        ("http://a.test/aaaaaaaaaaaaaaaaaaaaaaaa%G4aaaaaaaaaaaaaaaaaaaaaaaa", true),
        ("http://a.0x10/", false),
        ("http://a.test./", false),
        ("http://xn--mnchen-3ya.de/", true),
        ("https://a.test/#top", false),
        ("https://a.test/it's", true),
        ("https://a.test/?it's", false),
        ("https://a.test/a b", false),
        ("https://b\u{FC}cher.example/", false),
        ("not a url", false),
    ]

    @Test("a URL is matched as sent only when it is surely canonical", arguments: matchedAsSent)
    func asSent(url: String, isCanonical: Bool) {
        #expect(URLParts.isCanonical(url) == isCanonical)
        if isCanonical { #expect(URLParts(url).normalized == url) }
    }

    @Test("no URL that canonicalizing changes is matched as sent, over random URLs")
    func fastCheckNeverLies() {
        let pieces = [
            "a", "B", "0", "9", ".", "/", "//", "/./", "/../", "%2e", "%2E", "%41", "%2F", "%2f", "%zz", "%",
            "?", "#", "'", "`", "{", "}", "\\", " ", "\t", "-", "--", "xn--", ":80", ":8080", "@", "[", "]", "~",
            "\u{FC}", "\u{FF52}", "aaaaaaaaaaaaaaaa", "/bbbbbbbbbbbbbbb", "1.2.3.4", "255", ".0", "%u0",
        ]
        var random = SystemRandomNumberGenerator()
        for _ in 0..<100_000 {
            var url = Bool.random(using: &random) ? "http://" : "https://"
            for _ in 0..<Int.random(in: 1...40, using: &random) {
                url += pieces.randomElement(using: &random) ?? ""
            }
            if URLParts.isCanonical(url) {
                #expect(URLParts(url).normalized == url, "\(url)")
            }
        }
    }

    /// Whether the one-pass copy of `url`, when it makes one, is the full parse's, part for part.
    static func lightMatchesFullParse(_ url: String) -> Bool? {
        guard let light = URLParts.lightlyCanonicalized(url) else { return nil }
        let full = URLParts.fullyParsed(url)
        return light.normalizedBytes == full.normalizedBytes && light.hostRange == full.hostRange
            && light.pathRange == full.pathRange && light.queryRange == full.queryRange && light.port == full.port
            && light.changes == full.changes && full.rejection == nil && light.isSpecial == full.isSpecial
            && light.schemeLength == full.schemeLength && light.userinfo == full.userinfo
    }

    @Test("the one-pass copy of a nearly canonical URL is the full parse's, over random URLs")
    func lightCopyAgainstFullParse() {
        let pieces = [
            "a", "B", "0", "/", "/", "//", "///", ".", "..", "/./", "/../", "/.", "%2e", "%2E", "%41", "%7e", "%2F",
            "%2f", "%3a", "%zz", "%", "%4", "?", "?", "#", "#x", "'", "`", "{", "}", "\\", " ", "-", "_", "~", "=", "&",
            ":8080", ":80", ":443", ":0", "@", "\u{FC}", "A", "aaaaaaaaaaaaaaaa",
        ]
        var random = SystemRandomNumberGenerator()
        var made = 0
        for _ in 0..<100_000 {
            var url = ["http://", "https://", "http://a.test", "https://b.test"].randomElement(using: &random) ?? ""
            for _ in 0..<Int.random(in: 0...30, using: &random) {
                url += pieces.randomElement(using: &random) ?? ""
            }
            guard let matches = Self.lightMatchesFullParse(url) else { continue }
            made += 1
            #expect(matches, "\(url)")
        }
        #expect(made > 3_000)
    }

    @Test("the one-pass copy of each corpus URL it makes is the full parse's")
    func lightCopyOnTheCorpus() {
        var made = 0
        for url in CanonicalURLDifferentialTests.benchmarkURLs() where !URLParts.isCanonical(url) {
            guard let matches = Self.lightMatchesFullParse(url) else { continue }
            made += 1
            #expect(matches, "\(url)")
        }
        if !CanonicalURLDifferentialTests.benchmarkURLs().isEmpty { #expect(made > 4_000) }
    }

    @Test("the path and query check reads blocks of sixteen and thirty-two bytes as it reads one byte at a time")
    func pathQueryCheckAgainstByteByByte() {
        let pieces = [
            "a", "Z", "0", "/", "/", "//", ".", "..", "/./", "/../", "?", "%", "%2F", "%2f", "%41", "%7E", "%2E",
            "%zz", "%4", "'", "`", "{", "}", "\\", "\"", "#", "<", ">", " ", "\u{7F}", "\u{FC}", "-", "=", "&", "~",
        ]
        var random = SystemRandomNumberGenerator()
        var canonical = 0
        for _ in 0..<50_000 {
            // Mostly plain bytes, so that the odd ones fall at every place of a block.
            var text = "http://h.test"
            for _ in 0..<Int.random(in: 0...90, using: &random) {
                text += Int.random(in: 0..<5, using: &random) == 0 ? pieces.randomElement(using: &random) ?? "" : "b"
            }
            let bytes = Array(text.utf8)
            let from = 13
            let expected = bytes.span.isCanonicalPathAndQuery(from: from, isBytewise: true)
            #expect(bytes.span.isCanonicalPathAndQuery(from: from) == expected, "\(text)")
            if expected { canonical += 1 }
        }
        #expect(canonical > 1_000)
    }

    @Test(
        "a host of any length is matched as sent only when every byte is a lower-case letter, digit, dot or dash",
        arguments: ["https://", "http://"])
    func hostBytesAtEveryPosition(scheme: String) {
        let hostBytes = Array("ab-c.z0z9".utf8)
        for length in 1...40 {
            let host = String(decoding: (0..<length).map { hostBytes[$0 % hostBytes.count] }, as: UTF8.self)
            // A trailing dot is removed: that host is not canonical.
            #expect(URLParts.isCanonical(scheme + host + "/P?Q") == !host.hasSuffix("."), "\(scheme + host)")
            for position in 0..<length {
                for odd in ["A", "Z", "_", "@", "`", "{", ",", "\u{FC}"] {
                    var changed = Array(host)
                    changed[position] = Character(odd)
                    let url = scheme + String(changed) + "/x"
                    #expect(!URLParts.isCanonical(url), "\(url)")
                }
            }
        }
    }

    @Test("the span of host bytes is found sixteen at a time as it is byte by byte")
    func hostSpanAgainstByteByByte() {
        let alphabet = Array("az09.-/?:`{,@AZ_".utf8) + [0x2C, 0x2F, 0x40, 0x5B, 0x7F, 0x80, 0xFF]
        var random = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let count = Int.random(in: 0...70, using: &random)
            let bytes = (0..<count).map { _ in
                Int.random(in: 0..<4, using: &random) == 0
                    ? alphabet.randomElement(using: &random) ?? 0
                    : Array("a0.-z9".utf8).randomElement(using: &random) ?? 0
            }
            let from = Int.random(in: 0...count, using: &random)
            var expected = from
            while expected < count,
                bytes[expected] &- UInt8(ascii: "a") < 26 || bytes[expected] &- UInt8(ascii: "0") < 10
                    || bytes[expected] == UInt8(ascii: ".") || bytes[expected] == UInt8(ascii: "-")
            {
                expected += 1
            }
            #expect(bytes.span.hostSpan(from: from) == expected, "\(bytes) from \(from)")
        }
    }

    @Test("the host field is canonical, without port, user info or IPv6 brackets")
    func host() {
        #expect(AuditRequest(url: "https://u@WWW.Test.:8443/x").host == "www.test")
        #expect(AuditRequest(url: "http://[::1]:8080/").host == "::1")
        #expect(AuditRequest(url: "http://0x7f.1/").host == "127.0.0.1")
    }

    @Test("the parts of a canonical URL: authority, request target, user info, changes")
    func parts() throws {
        let url = try CanonicalURL("HTTP://me:pw@[::1]:8080/a/../b?x=%41#f")
        #expect(url.scheme == "http")
        #expect(url.host == "::1")
        #expect(url.port == 8080)
        #expect(url.authority == "[::1]:8080")
        #expect(url.requestTarget == "/b?x=A")
        #expect(url.userinfo == "me:pw")
        #expect(
            url.changes == [
                .schemeLowerCased, .userinfoRemoved, .dotSegmentsResolved, .unreservedDecoded, .fragmentRemoved,
            ])
    }

    @Test("user info is out of the url field and in a field of its own")
    func userinfoField() throws {
        let policy = try Policy(
            parsing: "[block] field=userinfo\nadmin ^admin(:|$)\n[warn]\nat @", file: "u.rules")
        #expect(policy.evaluate(AuditRequest(url: "http://admin:pw@a.test/")).rule?.id == "u/admin")
        #expect(policy.evaluate(AuditRequest(url: "http://admin@a.test/")).rule?.id == "u/admin")
        #expect(policy.evaluate(AuditRequest(url: "http://guest:admin@a.test/")).action == .pass)
        #expect(policy.evaluate(AuditRequest(url: "http://a.test/")).action == .pass)
    }

    @Test("the method is upper-cased")
    func method() {
        #expect(AuditRequest(method: "post", url: "https://a.test/").method == "POST")
    }
}
