/// One assertion about a policy: a request and the outcome it must get.
///
/// The same line format as `.test` files:
/// ```
/// # expect   rule                      [METHOD] URL [Header:value …]                [-> target or status]
/// block      competitor/rival-shop     https://www.rivalshop.com/cart
/// redirect   competitor/rival-search   https://search.rival.com/search?q=shoes -> https://search.example.com/?q=shoes
/// pass       -                         https://example.org/
/// record     statistics/api-calls      POST https://api.example.com/v1/items
/// record     statistics/large-upload-put  PUT https://up.example.com/f Content-Length:5000000
/// respond    local/health              https://api.example.test/health -> 200
/// ```
/// Headers follow the URL as `Name:value` (no space in the value).
public struct PolicyTestCase: Sendable, Hashable, CustomStringConvertible {
    /// What the case expects.
    public enum Expectation: String, Sendable, Hashable, CaseIterable {
        /// The verdict is `pass`.
        case pass
        /// The verdict is `allow`.
        case allow
        /// The verdict is `block`.
        case block
        /// The verdict is `redirect`.
        case redirect
        /// The verdict is `warn`.
        case warn
        /// The verdict is `respond` (with ``PolicyTestCase/responseStatus``, if given).
        case respond
        /// The rule is among the recorded rules (whatever the verdict).
        case record
        /// The rule is the request's cache rule (whatever the verdict).
        case cache
    }

    /// What the case expects.
    public let expectation: Expectation
    /// The deciding (or recorded) rule's full id; nil (`-`) asserts the verdict only.
    public let ruleID: String?
    /// The request to evaluate.
    public let request: AuditRequest
    /// For `redirect`, the exact target expected, if given.
    public let redirectTarget: String?
    /// For `respond`, the status expected, if given.
    public let responseStatus: Int?
    /// Where the case was written, when it comes from a file.
    public let location: SourceLocation?
    /// Where the rule id was written, for messages about it.
    var ruleLocation: SourceLocation?

    /// Creates a case.
    public init(
        expect expectation: Expectation, rule ruleID: String?, method: String = "GET", url: String,
        headers: [AuditRequest.Header] = [], redirectTarget: String? = nil, responseStatus: Int? = nil,
        location: SourceLocation? = nil
    ) {
        self.expectation = expectation
        self.ruleID = ruleID
        self.request = AuditRequest(method: method, url: url, headers: headers)
        self.redirectTarget = redirectTarget
        self.responseStatus = responseStatus
        self.location = location
    }

    /// The case as a test-file line.
    public var description: String {
        var text = "\(expectation.rawValue) \(ruleID ?? "-") "
        if request.method != "GET" { text += "\(request.method) " }
        text += request.url
        for header in request.headers { text += " \(header.name):\(header.value)" }
        if let redirectTarget { text += " -> \(redirectTarget)" }
        if let responseStatus { text += " -> \(responseStatus)" }
        return text
    }
}
