import Testing

@testable import AuditPolicy

/// Where a URL's authority starts: after `scheme:` and every slash that follows. `http://` and
/// `https://` in either case are recognized with one load; every other spelling byte by byte.
@Suite struct AuthorityStartTests {
    @Test(
        "the authority starts after the scheme, the colon and every slash",
        arguments: [
            ("https://a.test/", 8),
            ("HTTPS://a.test/", 8),
            ("hTtPs:///a.test", 9),
            ("http://a.test/x", 7),
            ("HTTP://a", 7),
            ("http:////a.test", 9),
            ("https://", 8),
            ("http://", 7),
            ("http:/a.test/xy", 6),
            ("https:/a.test/x", 7),
            ("httpx://a.test/", 8),
            ("ftp://a.test/xy", 6),
            ("svn+ssh://a.test", 10),
        ])
    func authorityStart(example: (url: String, start: Int)) {
        let found = RuleIndex.FieldGroup.authorityStart(in: Array(example.url.utf8).span)
        #expect(found?.0 == example.start)
        #expect(found?.isBounded == true)
    }

    @Test(
        "a subject without `scheme:/` has no authority, whatever bit 5 would make of its bytes",
        arguments: [
            "http\u{1A}//a.test/", "https\u{1A}//a.test", "http:\u{0F}/a.test", "https:\u{0F}/a.test",
            "h\u{14}tp://a.test/", "https:a.test/xyz", "1http://a.test/", "//a.test/x/y/z", "http", "",
        ])
    func noAuthority(url: String) {
        let found = RuleIndex.FieldGroup.authorityStart(in: Array(url.utf8).span)
        #expect(found == nil)
    }
}
