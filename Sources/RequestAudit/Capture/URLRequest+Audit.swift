import AuditPolicy
import AuditReport
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(AuditContentCoding)
    import AuditContentCoding
#endif

extension URLRequest {
    /// The request as the policy sees it: method, URL as sent, headers.
    var auditRequest: AuditRequest { auditRequest(sessionHeaders: [:]) }

    /// The request as the policy sees it, with the headers its session adds
    /// (`URLSessionConfiguration.sentAdditionalHeaders`) as FoundationNetworking sends
    /// them: each one the request does not set itself, whatever the case of its name.
    func auditRequest(sessionHeaders: [String: String]) -> AuditRequest {
        var fields = allHTTPHeaderFields ?? [:]
        if !sessionHeaders.isEmpty {
            let own = Set(fields.keys.map { $0.lowercased() })
            for (name, value) in sessionHeaders where !own.contains(name.lowercased()) { fields[name] = value }
        }
        return AuditRequest(
            method: httpMethod ?? "GET", url: url?.absoluteString ?? "",
            headers: fields.sorted { $0.key < $1.key }.map { AuditRequest.Header(name: $0.key, value: $0.value) })
    }

    /// The request's headers by name, as the cache and a recording keep them.
    var sortedHeaders: [RequestSnapshot.Header] {
        (allHTTPHeaderFields ?? [:]).sorted { $0.key < $1.key }.map {
            RequestSnapshot.Header(name: $0.key, value: $0.value)
        }
    }

    /// Methods that never carry a body, so a missing body is not a hidden one.
    private static let bodilessMethods: Set<String> = ["GET", "HEAD", "OPTIONS", "TRACE", "DELETE", "CONNECT"]

    /// Whether the request may carry a body this protocol cannot see (`uploadTask(with:from:)`,
    /// `uploadTask(withStreamedRequest:)`): a body method with neither `httpBody` nor a body stream.
    var mayHaveInvisibleBody: Bool {
        httpBody == nil && httpBodyStream == nil && !Self.bodilessMethods.contains((httpMethod ?? "GET").uppercased())
    }

    /// Whether the request carries a body this protocol sees (`httpBody` or a body stream).
    var hasBody: Bool { httpBody != nil || httpBodyStream != nil }
}

extension HTTPURLResponse {
    /// The response's headers, as the cache and a recording keep them.
    var headerList: [RequestSnapshot.Header] {
        allHeaderFields.compactMap { name, value in
            (name as? String).map { RequestSnapshot.Header(name: $0, value: "\(value)") }
        }
    }
}

extension RecordedExchange {
    /// An exchange of `request` (sent with `body`, kept if it is at most `limit` bytes) starting
    /// now, for a recording; its response is filled in as it comes. A body the app sends with a
    /// `Content-Encoding` is kept decoded, as HAR keeps bodies, so that it is redacted; its digest
    /// stays that of the bytes sent. (The response body needs no decoding: Foundation hands it over
    /// decoded.)
    init(request: URLRequest, body: RecordedRequestBody?, keepingAtMost limit: Int) {
        self.init(
            started: Date(), method: request.httpMethod?.uppercased() ?? "GET", url: request.url?.absoluteString ?? "",
            requestHeaders: request.sortedHeaders, requestBody: nil, status: 0, statusText: "", responseHeaders: [],
            chunks: [], waitMilliseconds: 0)
        guard let body else { return }
        appendRequestBody(body, keepingAtMost: limit)
        #if canImport(AuditContentCoding)
            undoRequestBodyCoding(keepingAtMost: limit)
        #endif
    }

    /// Notes a response head with `status` and `headers`, `waitMilliseconds` after the request
    /// began; its body starts anew.
    mutating func respond(status: Int, headers: [RequestSnapshot.Header], waitMilliseconds: Double) {
        self.status = status
        statusText = HTTPURLResponse.localizedString(forStatusCode: status)
        responseHeaders = headers
        chunks = []
        self.waitMilliseconds = waitMilliseconds
    }
}
