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

    /// `request` with the `Cookie` header its URL gets from the storage.
    func applying(to request: URLRequest) -> URLRequest {
        guard sendsCookies, let url = request.url else { return request }
        var request = request
        let header = HTTPCookie.requestHeaderFields(with: storage.cookies(for: url) ?? [])["Cookie"]
        request.setValue(header?.isEmpty == false ? header : nil, forHTTPHeaderField: "Cookie")
        return request
    }
}
