import AuditCache
import AuditLocking
import AuditPolicy
import AuditReport
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// One intercepted data task carried out by the forwarding session: relays each event of the
/// forwarded task to the caller's task as it happens, puts redirects and authentication challenges
/// to the caller's delegate, checks every redirect hop against the policy, and writes the record
/// when the forwarded task ends.
///
/// The forwarded task's events arrive on the forwarding session's work queue, which targets the
/// serial queue every session's work goes through, so the caller's client is told right there.
final class RelayedLoad: ForwardedLoadObserver, @unchecked Sendable {
    // @unchecked: the protocol and the caller's task are only used on the session queue or through
    // their thread-safe API (`delegate`, `state`); every mutable field is in `state`, a Mutex.

    private struct State {
        /// The last response and the bytes of its body so far.
        var response: URLResponse?
        var bodyBytes = 0
        /// The whole body, for a caller that cannot take chunks.
        var body = Data()
        var redirects: [URL] = []
        /// A redirect hop the policy refused: nothing more is relayed, and the caller gets the refusal.
        var refusedHop: RequestAuditError?
        /// The credential last used for a challenge, and where.
        var credential: (space: URLProtectionSpace, credential: URLCredential)?
        /// The credential last taken from the caller's storage, not to be proposed twice in a row.
        var storedCredentialUsed: URLCredential?
        /// Where the body is stored, when the response is being stored.
        var writer: CacheEntryWriter?
        /// A stored response served in place of the server's: one a 304 revalidated (`revalidated`),
        /// or a stale one in place of an error (`stale`), and the bytes of it the caller got.
        var servedFromCache: (kind: OutcomeSnapshot.Kind, bytes: Int)?
        /// What the recording keeps of this exchange (`AuditorConfiguration.recording`).
        var recorded: RecordedExchange?
        var responseStart: ContinuousClock.Instant?
    }

    /// What the cache does with this load.
    enum CacheUse: Sendable {
        /// The cache waits for this load's response (``CacheFill``): store it, or serve the
        /// stored one a 304 revalidates, or a stale one when the server cannot be reached.
        case filling(CacheFill)
        /// A POST, PUT, PATCH or DELETE a cache rule matched: the stored response of the URL is
        /// dropped once the server answers without an error.
        case invalidating(HTTPCache, url: String)
    }

    private let owner: RequestInfoProtocol
    private let caller: CallerSession.Details
    private let behaviour: CallerSession.Behaviour
    private let outgoing: URLRequest
    /// The request this load carries out, which it finishes.
    private let audited: AuditedRequest
    private let cookies: CookieJar?
    private let hopVerdict: @Sendable (URLRequest) -> RequestAuditError?
    private let isOnSessionQueue: Bool
    private let cache: CacheUse?
    private let recorder: HARRecorder?
    /// The request body: for the recording of the hop a 307 or 308 leads to (sent again), and held
    /// while the load lasts, so that a spooled body stream's file is there to be sent.
    private let recordedBody: RecordedRequestBody?
    private let started = ContinuousClock.now
    private let state = Locked(State())

    init(
        owner: RequestInfoProtocol, caller: CallerSession.Details, behaviour: CallerSession.Behaviour,
        outgoing: URLRequest, body: RecordedRequestBody?, auditor: Auditor, audited: AuditedRequest,
        cache: CacheUse? = nil
    ) {
        self.cache = cache
        recorder = auditor.recorder
        if let recorder {
            let recorded = RecordedExchange(request: outgoing, body: body, keepingAtMost: recorder.maximumBodyBytes)
            state.withLock { $0.recorded = recorded }
        }
        recordedBody = body
        self.owner = owner
        self.caller = caller
        self.behaviour = behaviour
        self.outgoing = outgoing
        self.audited = audited
        cookies = CookieJar(caller.configuration)
        hopVerdict = auditor.hopVerdict(audited.decision.policy, caller: caller)
        isOnSessionQueue = caller.forwarder.completesOnWorkQueue
    }

    /// The caller's task delegate (its own or its session's) and session, when it has one.
    private var callerDelegate: (delegate: URLSessionTaskDelegate, session: URLSession, task: URLSessionTask)? {
        guard let task = owner.task, let delegate = task.delegate, let session = caller.session else { return nil }
        return (delegate, session, task)
    }

    /// Runs `call` on the caller session's delegate queue, as FoundationNetworking calls delegates.
    private func onDelegateQueue(
        _ call: @escaping @Sendable (URLSessionTaskDelegate, URLSession, URLSessionTask) -> Void
    ) -> Bool {
        guard let (delegate, session, task) = callerDelegate else { return false }
        let target = DelegateTarget(delegate: delegate, session: session, task: task)
        session.delegateQueue.addOperation { call(target.delegate, target.session, target.task) }
        return true
    }

    // MARK: Response and body

    func forwarded(response: URLResponse) {
        let isRelayed = state.withLock { state -> Bool in
            guard state.refusedHop == nil else { return false }
            // A new response (after a challenge) starts a new body, as a new protocol would.
            state.response = response
            state.bodyBytes = 0
            state.body = Data()
            return true
        }
        guard isRelayed else { return }
        if let http = response as? HTTPURLResponse {
            cookies?.store(from: http)
            let fill: CacheFill? = if case .filling(let fill) = cache { fill } else { nil }
            // Listed once for both the recording and the cache.
            let headers = recorder != nil || fill != nil ? http.headerList : []
            if let fill { return fillCache(fill, from: http, headers: headers) }
            if recorder != nil { recordHead(http, headers: headers) }
        }
        relay(response)
    }

    /// Tells a caller with a delegate of `response` now; one without (a completion handler, `async`,
    /// no handler at all) is told when the load succeeds, as FoundationNetworking sets such a task's
    /// `response` only then (it stays nil while the body comes and after a failure).
    private func relay(_ response: URLResponse) {
        guard behaviour.hasDelegate else { return }
        let snapshot = ResponseSnapshot(response)
        owner.tellClientIfWaiting(isOnSessionQueue: isOnSessionQueue) { this in
            this.client?.urlProtocol(this, didReceive: snapshot.response, cacheStoragePolicy: .notAllowed)
        }
    }

    /// Hands the response to the cache: a 304 to the cache's own condition puts the stored response
    /// (its headers refreshed) in its place, and so does an error the cache answers with a stale
    /// response instead, each as it answers the caller's request
    /// (``CacheFill/replacement(forStatus:headers:)``); any other is stored while it is relayed, when
    /// it may be. The recording keeps what the caller gets.
    private func fillCache(_ fill: CacheFill, from http: HTTPURLResponse, headers: [RequestSnapshot.Header]) {
        guard let replacement = fill.replacement(forStatus: http.statusCode, headers: headers), let url = http.url,
            let served = HTTPURLResponse(
                url: url, statusCode: replacement.answer.status, httpVersion: "HTTP/1.1",
                headerFields: replacement.answer.headers.joinedFields)
        else {
            let writer = fill.store(status: http.statusCode, headers: headers)
            state.withLock { $0.writer = writer }
            if recorder != nil { recordHead(http, headers: headers) }
            return relay(http)
        }
        if recorder != nil { recordHead(served, headers: served.headerList) }
        state.withLock {
            $0.servedFromCache = (replacement.kind, replacement.answer.body.count)
            $0.response = served
        }
        relay(served)
        // The stored bytes, as the server's would have come.
        let (body, range) = (replacement.stored.body, replacement.answer.body)
        var offset = range.lowerBound
        while offset < range.upperBound {
            let chunk = body.chunk(at: offset, maximum: min(64 * 1024, range.upperBound - offset))
            guard !chunk.isEmpty else { break }
            offset += chunk.count
            forwarded(data: Data(chunk), isStored: true)
        }
    }

    func forwarded(data: Data) {
        forwarded(data: data, isStored: false)
    }

    /// A piece of the body: from the server (stored when the response is being stored), or from the
    /// cache (`isStored`) in place of a 304's empty one.
    private func forwarded(data: Data, isStored: Bool) {
        let receivesChunks = behaviour.receivesChunks
        let isRelayed = state.withLock { state -> Bool in
            guard state.refusedHop == nil, isStored || state.servedFromCache == nil else { return false }
            state.writer?.append(data)
            if let start = state.responseStart, let recorder {
                state.recorded?.appendBody(
                    [UInt8](data), at: (ContinuousClock.now - start).milliseconds,
                    keepingAtMost: recorder.maximumBodyBytes)
            }
            state.bodyBytes += data.count
            if !receivesChunks { state.body.append(data) }
            return true
        }
        guard isRelayed, receivesChunks else { return }
        owner.tellClientIfWaiting(isOnSessionQueue: isOnSessionQueue) { this in
            this.client?.urlProtocol(this, didLoad: data)
        }
    }

    // MARK: Redirects

    func forwarded(
        redirect response: HTTPURLResponse, proposed request: URLRequest,
        answer: @escaping @Sendable (URLRequest?) -> Void
    ) {
        let snapshot = ResponseSnapshot(response)
        // `isChosenByDelegate`: FoundationNetworking sends a hop the delegate returned as it is, and
        // adds the stored cookies only to a hop it follows by itself.
        let follow: @Sendable (URLRequest?, _ isChosenByDelegate: Bool) -> Void = { [self] chosen, isChosenByDelegate in
            // nil: the caller stops at the redirect and gets its response, as it would directly.
            guard let chosen, let url = chosen.url else { return answer(nil) }
            if let refusal = hopVerdict(chosen) {
                state.withLock { $0.refusedHop = refusal }
                return answer(nil)
            }
            state.withLock { $0.redirects.append(url) }
            if let http = snapshot.response as? HTTPURLResponse {
                cookies?.store(from: http)
                if recorder != nil { recordHop(http, to: chosen) }
            }
            answer(isChosenByDelegate ? chosen : cookies?.settingCookies(on: chosen) ?? chosen)
        }
        let isAsked = onDelegateQueue { delegate, session, task in
            guard let http = snapshot.response as? HTTPURLResponse else { return follow(request, false) }
            delegate.urlSession(
                session, task: task, willPerformHTTPRedirection: http, newRequest: request,
                completionHandler: { follow($0, true) })
        }
        if !isAsked { follow(request, false) }
    }

    // MARK: Authentication

    func forwarded(
        challenge: URLAuthenticationChallenge,
        answer forwardedAnswer: @escaping @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        // Answering with a credential suspends and resumes the forwarded task, which waits for the
        // session queue: answered from that queue (where this runs), it would deadlock every session.
        let answer: @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void = {
            disposition, credential in
            let credential = CredentialSnapshot(credential)
            Self.answerQueue.async { forwardedAnswer(disposition, credential.credential) }
        }
        let space = challenge.protectionSpace
        let stored = storedCredential(for: space)
        let proposed = state.withLock { $0.storedCredentialUsed } == stored ? nil : stored
        let apply: @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void = {
            [self] disposition, credential in
            switch disposition {
            case .useCredential:
                // FoundationNetworking traps on a nil credential here; the default handling is the safe reading.
                guard let credential else { return useDefault(proposed, space: space, answer: answer) }
                state.withLock { $0.credential = (space, credential) }
                answer(.useCredential, credential)
            case .performDefaultHandling:
                useDefault(proposed, space: space, answer: answer)
            case .cancelAuthenticationChallenge, .rejectProtectionSpace:
                answer(.cancelAuthenticationChallenge, nil)
            @unknown default:
                answer(.cancelAuthenticationChallenge, nil)
            }
        }
        let sender = challenge.sender
        let forCaller = ChallengeSnapshot(
            sender.map {
                URLAuthenticationChallenge(
                    protectionSpace: space, proposedCredential: proposed,
                    previousFailureCount: challenge.previousFailureCount, failureResponse: challenge.failureResponse,
                    error: challenge.error, sender: $0)
            } ?? challenge)
        let isAsked = onDelegateQueue { delegate, session, task in
            delegate.urlSession(session, task: task, didReceive: forCaller.challenge, completionHandler: apply)
        }
        if !isAsked { useDefault(proposed, space: space, answer: answer) }
    }

    /// Where challenges are answered: off the session queue every session shares.
    private static let answerQueue = DispatchQueue(label: "RequestAudit.RelayedLoad.challenges")

    /// The default handling: the caller's stored credential if there is one not just tried, else the
    /// failure response goes to the caller.
    private func useDefault(
        _ proposed: URLCredential?, space: URLProtectionSpace,
        answer: @Sendable (URLSession.AuthChallengeDisposition, URLCredential?) -> Void
    ) {
        guard let proposed else { return answer(.performDefaultHandling, nil) }
        state.withLock {
            $0.storedCredentialUsed = proposed
            $0.credential = (space, proposed)
        }
        answer(.useCredential, proposed)
    }

    /// The credential the caller session's storage has for `space`, as FoundationNetworking picks it:
    /// the first by user name, else the default one.
    private func storedCredential(for space: URLProtectionSpace) -> URLCredential? {
        guard let storage = caller.configuration?.urlCredentialStorage else { return nil }
        if let credentials = storage.credentials(for: space), let first = credentials.keys.sorted().first {
            return credentials[first]
        }
        return storage.defaultCredential(for: space)
    }

    // MARK: Upload body

    func forwarded(sentBodyBytes bytesSent: Int64, totalBytesSent: Int64, totalBytesExpectedToSend: Int64) {
        guard behaviour.hasDelegate else { return }
        _ = onDelegateQueue { delegate, session, task in
            delegate.urlSession(
                session, task: task, didSendBodyData: bytesSent, totalBytesSent: totalBytesSent,
                totalBytesExpectedToSend: totalBytesExpectedToSend)
        }
    }

    func forwardedNeedsNewBodyStream(answer: @escaping @Sendable (InputStream?) -> Void) {
        let isAsked = onDelegateQueue { delegate, session, task in
            delegate.urlSession(session, task: task, needNewBodyStream: answer)
        }
        if !isAsked { answer(nil) }
    }

    // MARK: The end

    /// Ends the audited request with what the load saw (its record is made on the pipeline's
    /// bookkeeping queue: this runs on the session's work queue).
    private func record(kind: OutcomeSnapshot.Kind, ended: State, failure: Error?) {
        audited.finish(
            Outcome(
                kind, status: (ended.response as? HTTPURLResponse)?.statusCode,
                bytes: [.response, .stored, .revalidated, .stale].contains(kind) ? ended.bodyBytes : nil,
                destination: outgoing.url.map { .url($0.absoluteString) } ?? .none,
                finalURL: ended.response?.url?.absoluteString, redirects: ended.redirects.map(\.absoluteString),
                failure: failure.map(Outcome.Failure.init)))
    }

    func forwardedCompletion(error: Error?) {
        // A load that ends between the caller's suspension and its forwarded task's: the caller hears
        // of it once it resumes the task, as it would of Foundation's own paused transfer.
        if owner.holdEnd({ [self] in end(error: error) }) { return }
        end(error: error)
    }

    /// Ends the load: records it and tells the caller (unless it stopped the load).
    private func end(error: Error?) {
        var ended = state.withLock { $0 }
        if case .filling(let fill) = cache {
            // The server could not be reached: a stale response the cache allows answers instead.
            if ended.response == nil, ended.refusedHop == nil, error.map(Self.isUnreachable) ?? false,
                let stale = fill.fallback
            {
                fill.finishWithoutStoring()
                return owner.serveStored(
                    stale, answering: fill.request, kind: .stale, behaviour: behaviour, audited: audited,
                    recorder: recorder)
            }
        }
        let isDelivered = owner.claimEnd()
        let kind: OutcomeSnapshot.Kind
        let failure: Error?
        if !isDelivered {
            (kind, failure) = (.cancelled, error ?? URLError(.cancelled))
        } else if let refusal = ended.refusedHop {
            (kind, failure) = (.blocked, refusal.urlError)
        } else if let error {
            (kind, failure) = (.failure, error)
        } else if ended.response == nil {
            (kind, failure) = (.failure, URLError(.badServerResponse))
        } else {
            (kind, failure) = (.response, nil)
        }
        let cached = finishCache(ended, failure: failure)
        ended.bodyBytes = cached.bytes ?? ended.bodyBytes
        let recorded = kind == .response ? cached.kind ?? kind : kind
        if failure == nil, let used = ended.credential, let storage = caller.configuration?.urlCredentialStorage {
            // As FoundationNetworking does after a challenge answered with a credential.
            storage.set(used.credential, for: used.space)
        }
        record(kind: recorded, ended: ended, failure: failure)
        if failure == nil, let exchange = ended.recorded, exchange.status > 0 { recorder?.add(exchange) }
        guard isDelivered else { return }
        if let failure {
            let sendable = SendableError(failure)
            return owner.tellClient(isOnSessionQueue: isOnSessionQueue) { this in
                this.client?.urlProtocol(this, didFailWithError: sendable.error)
            }
        }
        let body = behaviour.receivesChunks ? Data() : ended.body
        let heldResponse = behaviour.hasDelegate ? nil : ended.response.map(ResponseSnapshot.init)
        owner.tellClient(isOnSessionQueue: isOnSessionQueue) { this in
            if let heldResponse {
                this.client?.urlProtocol(this, didReceive: heldResponse.response, cacheStoragePolicy: .notAllowed)
            }
            if !body.isEmpty { this.client?.urlProtocol(this, didLoad: body) }
            this.client?.urlProtocolDidFinishLoading(this)
        }
    }
}

extension RelayedLoad {
    /// Ends what the cache does with this load: a stored body is put in place (or dropped on a
    /// failure), a changing request drops its URL's stored response. Returns how the load is then
    /// recorded when it got a response (`stored`, `revalidated`, `stale`), and the bytes the caller got.
    private func finishCache(_ ended: State, failure: Error?) -> (kind: OutcomeSnapshot.Kind?, bytes: Int?) {
        switch cache {
        case .filling(let fill):
            defer { fill.finishWithoutStoring() }
            if let served = ended.servedFromCache { return (served.kind, served.bytes) }
            guard let writer = ended.writer else { return (nil, nil) }
            guard failure == nil else {
                writer.abandon()
                return (nil, nil)
            }
            return (writer.commit() ? .stored : nil, nil)
        case .invalidating(let cache, let url):
            if failure == nil, let status = (ended.response as? HTTPURLResponse)?.statusCode, status < 400 {
                cache.invalidate(url: url)
            }
            return (nil, nil)
        case nil:
            return (nil, nil)
        }
    }

    /// Writes the redirect `http` of a hop that is followed to the recording as an exchange of its
    /// own, and starts the exchange of the request it leads to (with the body again after a 307
    /// or 308, as Foundation sends it).
    private func recordHop(_ http: HTTPURLResponse, to next: URLRequest) {
        let wait = (ContinuousClock.now - started).milliseconds
        let hop = state.withLock { state -> RecordedExchange? in
            guard var hop = state.recorded else { return nil }
            hop.respond(status: http.statusCode, headers: http.headerList, waitMilliseconds: wait)
            let body =
                next.recordedBody
                ?? ([307, 308].contains(http.statusCode) ? recordedBody : nil)
            state.recorded = RecordedExchange(
                request: next, body: body, keepingAtMost: recorder?.maximumBodyBytes ?? .max)
            return hop
        }
        if let hop { recorder?.add(hop) }
    }

    /// Notes the response head (its `headers` listed) for the recording.
    private func recordHead(_ http: HTTPURLResponse, headers: [RequestSnapshot.Header]) {
        let wait = (ContinuousClock.now - started).milliseconds
        state.withLock { state in
            state.responseStart = .now
            state.recorded?.respond(status: http.statusCode, headers: headers, waitMilliseconds: wait)
        }
    }

    /// Whether `error` says the server could not be reached (rather than the caller cancelling).
    static func isUnreachable(_ error: Error) -> Bool {
        let codes: Set<URLError.Code> = [
            .cannotConnectToHost, .cannotFindHost, .networkConnectionLost, .notConnectedToInternet, .timedOut,
            .dnsLookupFailed, .badServerResponse, .secureConnectionFailed,
        ]
        return (error as? URLError).map { codes.contains($0.code) } ?? false
    }
}

extension CallerSession.Behaviour {
    /// Whether FoundationNetworking tells the task's delegate (its own or its session's) of each event
    /// as it happens: the response, upload progress.
    var hasDelegate: Bool {
        switch self {
        case .delegate, .dataCompletionHandler(hasTaskDelegate: true): true
        case .noDelegate, .dataCompletionHandler(hasTaskDelegate: false), .downloadCompletionHandler: false
        }
    }
}

/// A caller's delegate, session and task crossing to its delegate queue. `@unchecked`: delegates are
/// called on that queue only, as FoundationNetworking calls them.
private struct DelegateTarget: @unchecked Sendable {
    let delegate: URLSessionTaskDelegate
    let session: URLSession
    let task: URLSessionTask
}

/// A response crossing to the caller's queue: an immutable snapshot once received.
struct ResponseSnapshot: @unchecked Sendable {
    let response: URLResponse
    init(_ response: URLResponse) { self.response = response }
}

/// A challenge crossing to the caller's delegate queue: immutable once made.
private struct ChallengeSnapshot: @unchecked Sendable {
    let challenge: URLAuthenticationChallenge
    init(_ challenge: URLAuthenticationChallenge) { self.challenge = challenge }
}

/// A credential crossing to the answer queue: immutable once made.
private struct CredentialSnapshot: @unchecked Sendable {
    let credential: URLCredential?
    init(_ credential: URLCredential?) { self.credential = credential }
}
