import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The caller session's cookie storage and policy, applied to every hop as its own session would.
struct CookieJar: @unchecked Sendable {
    // HTTPCookieStorage is internally synchronized.
    let storage: HTTPCookieStorage
    let acceptsCookies: Bool
    let sendsCookies: Bool

    init?(_ configuration: URLSessionConfiguration?) {
        guard let configuration, let storage = configuration.httpCookieStorage else { return nil }
        self.storage = storage
        acceptsCookies = configuration.httpCookieAcceptPolicy != .never
        sendsCookies = configuration.httpShouldSetCookies
    }

    /// Stores the cookies `response` sets.
    func store(from response: HTTPURLResponse) {
        // Most responses set no cookie: skip copying and parsing their headers.
        guard acceptsCookies, let url = response.url, response.value(forHTTPHeaderField: "Set-Cookie") != nil
        else { return }
        let fields = response.allHeaderFields.reduce(into: [String: String]()) { fields, pair in
            if let name = pair.key as? String, let value = pair.value as? String { fields[name] = value }
        }
        let cookies = HTTPCookie.cookies(withResponseHeaderFields: fields, for: url)
        if !cookies.isEmpty { storage.setCookies(cookies, for: url, mainDocumentURL: nil) }
    }

    /// `request` as FoundationNetworking prepares a redirect hop it follows by itself (no delegate
    /// was asked): the storage's cookies for its URL replace its `Cookie` header when there are any;
    /// otherwise the header the previous hop carried stays. A hop a delegate chose goes out as the
    /// delegate returned it.
    func settingCookies(on request: URLRequest) -> URLRequest {
        guard sendsCookies, let url = request.url,
            let header = HTTPCookie.requestHeaderFields(with: storage.cookies(for: url) ?? [])["Cookie"],
            !header.isEmpty
        else { return request }
        var request = request
        request.setValue(header, forHTTPHeaderField: "Cookie")
        return request
    }
}
