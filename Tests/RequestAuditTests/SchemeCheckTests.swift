import Testing

@testable import RequestAudit

@Suite struct SchemeCheckTests {
    @Test(
        "http and https are recognized in any case, and nothing else is",
        arguments: [
            ("http", true), ("https", true), ("HTTP", true), ("HtTpS", true),
            ("", false), ("h", false), ("htt", false), ("httpx", false), ("httpss", false), ("ftp", false),
            ("wss", false), ("hxxp", false), ("http\u{0}", false), ("httpſ", false),
        ])
    func httpSchemes(_ scheme: String, _ isHTTP: Bool) {
        #expect(RequestInfoProtocol.isHTTPScheme(scheme) == isHTTP)
    }
}
