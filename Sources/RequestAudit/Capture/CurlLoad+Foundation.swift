import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// What FoundationNetworking's HTTP protocol makes of what libcurl gives it (`HTTPMessage.swift`,
// `_HTTPURLProtocol.redirectRequest`, `MultiHandle`'s error codes, `_NativeProtocol.failWith`),
// written again here so that a ``CurlLoad`` hands the caller the same values.
extension CurlLoad {
    /// The response whose header ends `lines` (the last header of the exchange: informational ones
    /// come before it), at `url`: a response with no header at all is HTTP/0.9's, 200 with no
    /// fields. Nil when its status line cannot be read.
    static func response(from lines: [String], url: URL) -> HTTPURLResponse? {
        guard let end = lines.lastIndex(of: "") else {
            return lines.isEmpty
                ? HTTPURLResponse(url: url, statusCode: 200, httpVersion: "HTTP/0.9", headerFields: [:]) : nil
        }
        let start = lines[..<end].lastIndex(of: "").map { $0 + 1 } ?? 0
        guard start < end else { return nil }
        let parts = lines[start].split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count >= 2, let status = Int(parts[1]), (100...999).contains(status) else { return nil }
        var fields: [String: String] = [:]
        var previous: String?
        for line in lines[(start + 1)..<end] {
            if let first = line.first, first == " " || first == "\t", let name = previous {
                // A folded line continues the field before it.
                fields[name, default: ""] += " " + line.trimmingCharacters(in: .whitespaces)
                continue
            }
            guard let colon = line.firstIndex(of: ":") else { return nil }
            let name = String(line[..<colon])
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            // Repeated fields are joined with ", ", as FoundationNetworking joins them.
            if let earlier = fields[name] { fields[name] = earlier + ", " + value } else { fields[name] = value }
            previous = name
        }
        return HTTPURLResponse(url: url, statusCode: status, httpVersion: String(parts[0]), headerFields: fields)
    }

    /// The request FoundationNetworking follows `response` with, made from `request`; nil when it
    /// does not follow it (no `Location`, or a status that is not 301, 302, 303 or 305–308).
    static func redirectRequest(for response: HTTPURLResponse, from request: URLRequest) -> URLRequest? {
        guard let location = response.value(forHTTPHeaderField: "Location"), let target = URL(string: location)
        else { return nil }
        var next = request
        switch response.statusCode {
        case 301...302 where request.httpMethod == "POST", 303:
            next.httpMethod = "GET"
            next.httpBody = nil
        case 301...302, 305...308:
            break
        default:
            return nil
        }
        guard target.scheme == nil || target.host == nil else {
            next.url = target
            return next
        }
        guard let from = request.url, var components = URLComponents(url: from, resolvingAgainstBaseURL: false)
        else { return nil }
        if target.host != nil {
            components.host = target.host
            components.port = target.port
        }
        components.path = target.path.hasPrefix("/") ? target.path : "/" + target.path
        components.percentEncodedQuery = target.query
        components.percentEncodedFragment = target.fragment
        guard let url = components.url else { return nil }
        next.url = url
        return next
    }

    /// The `NSURLErrorDomain` code FoundationNetworking gives a libcurl failure (`curlCode`, a
    /// CURLcode, with the `errno` of a failed connection).
    static func urlErrorCode(curlCode: Int32, osErrno: Int32) -> Int {
        switch (curlCode, osErrno) {
        case (_, ECONNREFUSED): NSURLErrorCannotConnectToHost
        case (1, _): NSURLErrorUnsupportedURL  // CURLE_UNSUPPORTED_PROTOCOL
        case (3, _): NSURLErrorBadURL  // CURLE_URL_MALFORMAT
        case (6, _): NSURLErrorCannotFindHost  // CURLE_COULDNT_RESOLVE_HOST
        case (55, ECONNRESET), (56, ECONNRESET): NSURLErrorNetworkConnectionLost  // CURLE_SEND_ERROR, CURLE_RECV_ERROR
        case (52, _): NSURLErrorBadServerResponse  // CURLE_GOT_NOTHING
        case (7, ETIMEDOUT), (28, _): NSURLErrorTimedOut  // CURLE_COULDNT_CONNECT, CURLE_OPERATION_TIMEDOUT
        default: NSURLErrorUnknown
        }
    }

    /// The error FoundationNetworking's protocol fails a task with: code `code`, libcurl's `message`,
    /// and the failing URL.
    static func failure(code: Int, message: String, url: URL?) -> URLError {
        let underlying = NSError(domain: NSURLErrorDomain, code: code, userInfo: [NSLocalizedDescriptionKey: message])
        var userInfo: [String: Any] = [NSUnderlyingErrorKey: underlying, NSLocalizedDescriptionKey: message]
        if let url {
            userInfo[NSURLErrorFailingURLErrorKey] = url
            userInfo["NSErrorFailingURLStringKey"] = url.absoluteString
        }
        return URLError(URLError.Code(rawValue: code) ?? .unknown, userInfo: userInfo)
    }
}
