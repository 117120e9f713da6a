import AuditPipeline
import AuditPolicy
import AuditReport
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension RequestInfoProtocol {
    /// Answers a `respond` verdict locally, as a server's response reaches the caller: the status and
    /// headers, then the body (chunk by chunk to a delegate, whole to a completion handler), then the
    /// end. Nothing is sent. A rule's body or file is delivered at once; a handler runs in a task
    /// that `stopLoading` cancels.
    ///
    /// `delivery` is nil for a download task, which FoundationNetworking completes only for its own
    /// protocol (it writes the file): the rule fails closed.
    func respond(_ audited: AuditedRequest, delivery: CallerSession.Behaviour?) {
        let decision = audited.decision
        let rule = decision.decision.rule ?? "-"
        guard let delivery else {
            return refuse(.responseUnavailable(rule: rule, url: decision.snapshot.url), audited)
        }
        if let fixed = decision.verdict.response.flatMap(HandlerResponse.init) {
            return deliver(fixed, delivery, audited)
        }
        let this = Reference(self)
        let request = self.request
        // An upload task's body is in the task (made with bytes or a file; nil when streamed).
        let uploaded = (task as? URLSessionUploadTask).flatMap { PlatformInternals.knownBody(of: $0)?.bytes }
        let task = Task {
            let response: HandlerResponse
            do throws(PipelineError) {
                response = try await audited.localResponse(
                    for: request.auditRequest, body: uploaded ?? request.bodyForHandler)
            } catch {
                let refusal = RequestAuditError.responseFailed(
                    rule: rule, reason: error.description, url: decision.snapshot.url)
                return this.value.refuse(refusal, audited)
            }
            await this.value.deliverStreaming(response, delivery, audited)
        }
        if !state.withLock({ $0.responding(task) }) { task.cancel() }
    }

    /// Delivers a whole response, recorded as `kind`.
    private func deliver(
        _ response: HandlerResponse, _ delivery: CallerSession.Behaviour, _ audited: AuditedRequest,
        kind: OutcomeSnapshot.Kind = .responded, followed: [URL] = []
    ) {
        guard let head = head(of: response, url: followed.last) else { return failResponse(response, audited) }
        let body: Data = if case .data(let data) = response.body, !isHead { data } else { Data() }
        tellClientIfWaiting(isOnSessionQueue: false) { this in
            this.client?.urlProtocol(this, didReceive: head.response, cacheStoragePolicy: .notAllowed)
            if !body.isEmpty { this.client?.urlProtocol(this, didLoad: body) }
        }
        end(response.status, bytes: body.count, failure: nil, audited, kind: kind, followed: followed)
    }

    /// Delivers a response whose body may be a stream, recorded as `kind`: each chunk is on the
    /// caller's queue before the next is read, so a fast handler (or a large stored body) never
    /// piles up chunks the caller has not taken. After `followed` redirects (a replayed recording's),
    /// the response is the last one's, as Foundation gives it.
    func deliverStreaming(
        _ response: HandlerResponse, _ delivery: CallerSession.Behaviour, _ audited: AuditedRequest,
        kind: OutcomeSnapshot.Kind = .responded, followed: [URL] = []
    ) async {
        guard case .stream(let chunks) = response.body else {
            return deliver(response, delivery, audited, kind: kind, followed: followed)
        }
        guard let head = head(of: response, url: followed.last) else { return failResponse(response, audited) }
        await tellClientAndWait { this in
            this.client?.urlProtocol(this, didReceive: head.response, cacheStoragePolicy: .notAllowed)
        }
        var bytes = 0
        var whole = Data()
        var failure: Error?
        do {
            for try await chunk in chunks where !isHead && !chunk.isEmpty {
                guard !Task.isCancelled, state.withLock({ $0.isWaiting }) else { break }
                bytes += chunk.count
                guard delivery.receivesChunks else {
                    whole.append(chunk)
                    continue
                }
                await tellClientAndWait { this in this.client?.urlProtocol(this, didLoad: chunk) }
            }
        } catch {
            failure = error
        }
        if !whole.isEmpty {
            let body = whole
            tellClientIfWaiting(isOnSessionQueue: false) { this in this.client?.urlProtocol(this, didLoad: body) }
        }
        end(response.status, bytes: bytes, failure: failure, audited, kind: kind, followed: followed)
    }

    /// Writes the record (`kind` when delivered whole, with the redirects `followed`) and tells the
    /// caller the response ended (or failed).
    private func end(
        _ status: Int, bytes: Int, failure: Error?, _ audited: AuditedRequest, kind delivered: OutcomeSnapshot.Kind,
        followed: [URL] = []
    ) {
        let isDelivered = claimEnd()
        let kind: OutcomeSnapshot.Kind = !isDelivered ? .cancelled : failure == nil ? delivered : .failure
        audited.finish(
            Outcome(
                kind, status: status, bytes: bytes, finalURL: followed.last?.absoluteString,
                redirects: followed.map(\.absoluteString), failure: failure.map(Outcome.Failure.init)))
        guard isDelivered else { return }
        let sendable = failure.map(SendableError.init)
        tellClient { this in
            if let sendable {
                this.client?.urlProtocol(this, didFailWithError: sendable.error)
            } else {
                this.client?.urlProtocolDidFinishLoading(this)
            }
        }
    }

    /// A handler's response that cannot be made into an `HTTPURLResponse` (a status out of range).
    private func failResponse(_ response: HandlerResponse, _ audited: AuditedRequest) {
        let refusal = RequestAuditError.responseFailed(
            rule: audited.decision.decision.rule ?? "-", reason: "status \(response.status) is not 200–599",
            url: audited.decision.snapshot.url)
        refuse(refusal, audited)
    }

    /// The response head the caller gets (for `url`, or the request's); nil for a status a response
    /// cannot have.
    private func head(of response: HandlerResponse, url: URL? = nil) -> ResponseSnapshot? {
        guard LocalResponder.statuses.contains(response.status), let url = url ?? request.url,
            let http = HTTPURLResponse(
                url: url, statusCode: response.status, httpVersion: "HTTP/1.1", headerFields: response.headers)
        else { return nil }
        return ResponseSnapshot(http)
    }

    /// Whether the request is a HEAD request, whose response has no body.
    private var isHead: Bool { request.httpMethod?.uppercased() == "HEAD" }

    /// Runs `message` as ``tellClientIfWaiting(isOnSessionQueue:_:)`` does and returns once it ran.
    private func tellClientAndWait(_ message: @escaping @Sendable (RequestInfoProtocol) -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            guard state.withLock({ $0.isWaiting }) else { return continuation.resume() }
            tellClient { this in
                message(this)
                continuation.resume()
            }
        }
    }
}

extension URLRequest {
    /// The body a response handler gets: `httpBody`, or the body stream read to its end; nil when
    /// the request has neither (an upload task's body is in the task).
    var bodyForHandler: Data? {
        if let httpBody { return httpBody }
        guard let stream = httpBodyStream else { return nil }
        stream.open()
        defer { stream.close() }
        var body = Data()
        var buffer = [UInt8](repeating: 0, count: 64 * 1024)
        while true {
            let count = unsafe stream.read(&buffer, maxLength: buffer.count)
            guard count > 0 else { break }
            unsafe body.append(buffer, count: count)
        }
        return body
    }
}
