import Testing

@testable import AuditPolicy

@Suite struct URLNormalizationTests {
    static let cases: [(String, String)] = [
        ("HTTPS://Shop.Example.COM:443/Cart?ID=1#top", "https://shop.example.com/Cart?ID=1"),
        ("http://EXAMPLE.com:80", "http://example.com"),
        ("http://example.com:8080/A", "http://example.com:8080/A"),
        ("https://example.com:80/", "https://example.com:80/"),
        ("https://User:PW@Example.com/x", "https://User:PW@example.com/x"),
        ("http://[2001:DB8::1]:80/p", "http://[2001:db8::1]/p"),
        ("https://a.test/%7Euser/../x?q=A%20B", "https://a.test/%7Euser/../x?q=A%20B"),
        ("https://a.test?x=1#f", "https://a.test?x=1"),
        ("not a url#frag", "not a url"),
        ("https://a.test:/x", "https://a.test/x"),
        ("HTTP://A.test:80?q=1", "http://a.test?q=1"),
        ("WSS://A.test:443/s", "wss://a.test/s"),
        ("ftp://Files.test:21/f", "ftp://files.test/f"),
        ("https://B\u{DC}CHER.Example:443/Pfad", "https://b\u{FC}cher.example/Pfad"),
        ("https://B\u{DC}CHER.Example:8443/", "https://b\u{FC}cher.example:8443/"),
        ("https://[::1]x/p", "https://[::1]/p"),
        ("h://x", "h://x"),
    ]

    @Test(
        "url normalization lower-cases scheme and host, drops default port and fragment, keeps the rest",
        arguments: cases)
    func normalizes(url: String, expected: String) {
        #expect(AuditRequest(url: url).normalizedURL == expected)
    }

    /// URLs the evaluation may match as sent (`true`) or must normalize first (`false`).
    static let alreadyNormalized: [(String, Bool)] = [
        ("https://shop.example.com/Cart?ID=1", true),
        ("http://a-b.test/%7Euser/../X", true),
        ("https://a.test?Q=A", true),
        ("https://a.test", true),
        ("not a url", true),
        ("1http://A.test/", true),
        ("https://a.test/?next=HTTP://B.TEST/", true),
        ("HTTPS://a.test/", false),
        ("https://A.test/", false),
        ("https://a.test:443/", false),
        ("https://a.test:/", false),
        ("https://a.test:8443/", false),
        ("https://u@a.test/", false),
        ("http://[::1]/", false),
        ("https://a.test/#top", false),
        ("not a url#frag", false),
        ("https://b\u{FC}cher.example/", false),
    ]

    @Test(
        "a URL is matched as sent only when normalizing would not change it",
        arguments: alreadyNormalized)
    func matchedAsSent(url: String, isNormalized: Bool) {
        #expect(URLParts.isNormalized(url) == isNormalized)
        if isNormalized { #expect(URLParts(url).normalized == url) }
    }

    @Test("no URL that normalizing changes is matched as sent", arguments: cases.filter { $0.0 != $0.1 })
    func changedURLIsNotMatchedAsSent(url: String, expected: String) {
        #expect(URLParts.isNormalized(url) == false)
    }

    @Test(
        "a host of any length is matched as sent only when every byte is a lower-case letter, digit, dot or dash",
        arguments: ["https://", "http://", "wss://", "h://"])
    func hostBytesAtEveryPosition(scheme: String) {
        let hostBytes = Array("ab-c.0z9".utf8)
        for length in 1...40 {
            let host = String(decoding: (0..<length).map { hostBytes[$0 % hostBytes.count] }, as: UTF8.self)
            for ending in ["", "/", "/P?Q", "?Q=A"] {
                #expect(URLParts.isNormalized(scheme + host + ending), "\(scheme + host + ending)")
            }
            for position in 0..<length {
                for odd in ["A", "Z", "_", "@", ":", "`", "{", ",", "\u{FC}"] {
                    var changed = Array(host)
                    changed[position] = Character(odd)
                    let url = scheme + String(changed) + "/x"
                    #expect(!URLParts.isNormalized(url), "\(url)")
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
            // Mostly host bytes, so that spans run across blocks.
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
            let found = bytes.span.hostSpan(from: from)
            #expect(found == expected, "\(bytes) from \(from)")
        }
    }

    @Test("the host drops port, user info and IPv6 brackets")
    func host() {
        #expect(AuditRequest(url: "https://u@WWW.Test:8443/x").host == "www.test")
        #expect(AuditRequest(url: "http://[::1]:8080/").host == "::1")
    }

    @Test("the method is upper-cased")
    func method() {
        #expect(AuditRequest(method: "post", url: "https://a.test/").method == "POST")
    }
}
