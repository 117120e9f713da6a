import AuditLocking
import AuditPipeline
import AuditReport
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A plain-http data task without a delegate (a completion handler, `async`, `URLSession.shared`),
/// loaded by libcurl directly (``CurlTransfer``) after the decision, as FoundationNetworking's HTTP
/// protocol loads it, without a second URLSession task or Foundation's protocol inside ours.
///
/// What the server and the caller see is what they see without RequestAudit, because it is the
/// same library set up the same way (`_HTTPURLProtocol.configureEasyHandle`):
/// - the request: the session's `httpAdditionalHeaders` under the request's own, FoundationNetworking's
///   `Connection: keep-alive`, `User-Agent` and `Accept-Language` unless set, `Content-Type: application/x-www-form-urlencoded`
///   for a POST body without one, libcurl's `Expect` removed when there is a body, compressed
///   responses decoded;
/// - redirects (301, 302, 303, 305–308 with a `Location`) followed as FoundationNetworking follows
///   them without a delegate (a 303, or a POST answered 301 or 302, becomes a GET; later hops carry
///   no body; 20 at most), each hop checked against the policy and sent with the `Cookie` header the
///   caller's storage gives it; a refused hop ends the load with the refusal;
/// - cookies from every `Set-Cookie` line stored in the caller's storage unless it accepts none;
/// - the response (its header fields joined as FoundationNetworking joins them), the body (none for an
///   unfollowed 301–308, whose body Foundation keeps aside), and errors with FoundationNetworking's
///   codes, messages and failing URLs; the session's request timeout as an idle timeout.
///
/// Tasks this cannot load the same way stay with Foundation's protocol (see ``canLoad(_:caller:)``).
/// Told of, as FoundationNetworking's `URLProtocolClient` requires, on the caller session's work queue.
final class CurlLoad: @unchecked Sendable {
    // @unchecked: the protocol is only used through its thread-safe methods (`tellClient`,
    // `claimEnd`); every mutable field is in `state`, a Mutex.

    /// Who decided the load and how it is recorded.
    struct Audit: Sendable {
        let pipeline: AuditPipeline
        let decision: AuditPipeline.DeferredDecision
        let hopVerdict: @Sendable (URLRequest) -> RequestAuditError?
    }

    private struct State {
        var transfer: CurlTransfer?
        var redirects: [URL] = []
    }

    private let owner: RequestInfoProtocol.Reference
    private let caller: CallerSession.Details
    private let original: URLRequest
    private let audit: Audit
    private let cookies: CookieJar?
    private let state = Locked(State())

    init(owner: RequestInfoProtocol, caller: CallerSession.Details, request: URLRequest, audit: Audit) {
        self.owner = RequestInfoProtocol.Reference(owner)
        self.caller = caller
        self.original = request
        self.audit = audit
        cookies = CookieJar(caller.configuration)
    }

    /// Whether `request` of a task without a delegate can be loaded this way with the same result as
    /// FoundationNetworking's protocol: plain http with a host and no user in the URL, no body stream,
    /// no body on a GET (which FoundationNetworking refuses), a session with FoundationNetworking's
    /// connection defaults, no proxy dictionary, string-valued additional headers and a timeout of a
    /// second or more.
    static func canLoad(_ request: URLRequest, caller: CallerSession.Details) -> Bool {
        guard CurlTransfer.isAvailable, let url = request.url, url.scheme?.lowercased() == "http", url.host != nil,
            url.user == nil, request.httpBodyStream == nil, let configuration = caller.configuration
        else { return false }
        if request.httpMethod == "GET", request.httpBody?.isEmpty == false { return false }
        guard configuration.httpMaximumConnectionsPerHost == 6,
            configuration.connectionProxyDictionary?.isEmpty ?? true,
            (configuration.httpAdditionalHeaders?.count ?? 0) == caller.additionalHeaders.count
        else { return false }
        return idleTimeoutMilliseconds(of: request, caller: caller) > 0
    }

    /// FoundationNetworking's timeout for a request: the session's, or the request's own when it
    /// differs from URLRequest's default, in whole seconds.
    private static func idleTimeoutMilliseconds(of request: URLRequest, caller: CallerSession.Details) -> Int {
        let seconds = request.timeoutInterval != 60 ? request.timeoutInterval : caller.requestTimeout ?? 60
        return Int(seconds) * 1000
    }

    /// Sends the first request; false when the transfer could not be made (nothing was sent).
    func start() -> Bool {
        send(original, isFirst: true)
    }

    /// The caller stopped the load: the transfer stops, and its end records the cancellation.
    func stop() {
        state.withLock { $0.transfer }?.cancel()
    }

    /// Sends one hop: `request` as FoundationNetworking's protocol sends it, its body only on the first.
    private func send(_ request: URLRequest, isFirst: Bool) -> Bool {
        guard let url = request.url else { return false }
        let method = request.httpMethod ?? "GET"
        // FoundationNetworking's task keeps a non-empty body as its known body, and forgets it on a
        // redirect: later hops send none (a GET none at all, other methods an empty one).
        let knownBody = isFirst ? request.httpBody.flatMap { $0.isEmpty ? nil : $0 } : nil
        let body: Data? = knownBody ?? (method == "GET" ? nil : Data())
        guard
            let transfer = CurlTransfer(
                url: url.absoluteString, method: method,
                headers: headerLines(for: request, hasKnownBody: knownBody != nil),
                body: body, isHead: method == "HEAD",
                idleTimeoutMilliseconds: Self.idleTimeoutMilliseconds(of: request, caller: caller))
        else { return false }
        state.withLock { $0.transfer = transfer }
        transfer.start { [self] outcome in received(outcome, for: request) }
        return true
    }

    /// The header lines FoundationNetworking's protocol gives libcurl for `request`.
    private func headerLines(for request: URLRequest, hasKnownBody: Bool) -> [String] {
        var fields: [(name: String, value: String)] = caller.additionalHeaders
        for (name, value) in request.allHTTPHeaderFields ?? [:] {
            let lowered = name.lowercased()
            fields.removeAll { $0.name.lowercased() == lowered }
            fields.append((name, value))
        }
        fields += Self.defaultFields
        var names = Set<String>()
        var lines: [String] = []
        for (name, value) in fields where names.insert(name.lowercased()).inserted {
            lines.append(value.isEmpty ? name + ";" : name + ": " + value)
        }
        if hasKnownBody, names.insert("expect").inserted { lines.append("Expect:") }
        if request.httpMethod == "POST", request.value(forHTTPHeaderField: "Content-Type") == nil,
            request.httpBody?.isEmpty == false
        {
            lines.append("Content-Type:application/x-www-form-urlencoded")
        }
        return lines
    }

    /// `Connection`, `User-Agent` and `Accept-Language` as FoundationNetworking sets each when a
    /// request has none.
    private static let defaultFields: [(name: String, value: String)] = {
        var fields = [
            ("Connection", "keep-alive"),
            ("User-Agent", "\(ProcessInfo.processInfo.processName) (unknown version) curl/\(CurlTransfer.version)"),
        ]
        if let language = Locale.current.language.languageCode?.identifier {
            fields.append(("Accept-Language", language))
        }
        return fields
    }()

    // MARK: The end of a hop (on the transfer thread)

    private func received(_ outcome: CurlTransfer.Outcome, for request: URLRequest) {
        guard let url = request.url else { return }
        switch outcome.ending {
        case .cancelled:
            return end(.cancelled, response: nil, error: URLError(.cancelled), body: nil)
        case .idleTimeout:
            // FoundationNetworking's timeout error carries nothing else.
            return end(.failure, response: nil, error: URLError(.timedOut), body: nil)
        case .failed(let code, let osErrno, let message):
            let error = Self.failure(
                code: Self.urlErrorCode(curlCode: code, osErrno: osErrno), message: message, url: original.url)
            return end(.failure, response: nil, error: error, body: nil)
        case .completed:
            break
        }
        storeCookies(from: outcome.headerLines, url: url)
        guard let response = Self.response(from: outcome.headerLines, url: url) else {
            let error = Self.failure(code: NSURLErrorUnknown, message: "Failed writing header", url: original.url)
            return end(.failure, response: nil, error: error, body: nil)
        }
        guard let next = Self.redirectRequest(for: response, from: request) else {
            // Foundation keeps an unfollowed redirect's body aside: the caller gets none.
            let body = (301...308).contains(response.statusCode) ? Data() : outcome.body
            return end(.response, response: response, error: nil, body: body)
        }
        let count = state.withLock { $0.redirects.count }
        guard count < 20 else {
            let error = Self.failure(code: NSURLErrorHTTPTooManyRedirects, message: "too many HTTP redirects", url: url)
            return end(.failure, response: nil, error: error, body: nil)
        }
        if let refusal = audit.hopVerdict(next) {
            return end(.blocked, response: nil, error: refusal.urlError, body: nil)
        }
        let hop = cookies?.addingCookies(to: next) ?? next
        if let target = hop.url { state.withLock { $0.redirects.append(target) } }
        if !send(hop, isFirst: false) {
            end(.failure, response: nil, error: URLError(.unknown), body: nil)
        }
    }

    /// Stores the cookies of each `Set-Cookie` line, as FoundationNetworking does line by line.
    private func storeCookies(from lines: [String], url: URL) {
        guard let cookies, cookies.acceptsCookies else { return }
        for line in lines {
            guard let colon = line.firstIndex(of: ":") else { continue }
            let name = line[..<colon].trimmingCharacters(in: .whitespacesAndNewlines)
            guard name == "Set-Cookie" else { continue }
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
            let found = HTTPCookie.cookies(withResponseHeaderFields: [name: value], for: url)
            if !found.isEmpty { cookies.storage.setCookies(found, for: url, mainDocumentURL: nil) }
        }
    }

    /// Records the load and tells the caller, on its session's work queue.
    private func end(_ kind: OutcomeSnapshot.Kind, response: HTTPURLResponse?, error: Error?, body: Data?) {
        let redirects = state.withLock { state in
            state.transfer = nil
            return state.redirects
        }
        let owner = owner.value
        let failure = error.map(SendableError.init)
        let snapshot = response.map(ResponseSnapshot.init)
        let (status, finalURL, bytes) = (response?.statusCode, response?.url?.absoluteString, body?.count ?? 0)
        let record: @Sendable (OutcomeSnapshot.Kind) -> Void = { [audit, original] kind in
            SystemLoad.recordChecked(
                pipeline: audit.pipeline, decision: audit.decision, requestURL: original.url?.absoluteString,
                kind: kind, status: status, bytes: bytes, finalURL: finalURL, redirects: redirects,
                error: failure?.error)
        }
        if kind == .cancelled { return record(.cancelled) }
        owner.tellClient { this in
            guard this.claimEnd() else { return record(.cancelled) }
            record(kind)
            if let failure { return this.client?.urlProtocol(this, didFailWithError: failure.error) ?? () }
            guard let response = snapshot?.response else { return }
            this.client?.urlProtocol(this, didReceive: response, cacheStoragePolicy: .notAllowed)
            if let body, !body.isEmpty { this.client?.urlProtocol(this, didLoad: body) }
            this.client?.urlProtocolDidFinishLoading(this)
        }
    }
}
