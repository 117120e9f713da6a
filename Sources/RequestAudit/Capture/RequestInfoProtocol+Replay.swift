import AuditPipeline
import AuditReport
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(AuditContentCoding)
    import AuditContentCoding
#endif

/// An app's replayed recording (`AuditorConfiguration.recording = .replay(…)`): the responses, what
/// a miss gets, and the pace of streams.
struct AppReplay: Sendable {
    let recording: HARReplay
    let onMiss: HARReplay.OnMiss
    /// Recorded times are divided by it; 0: at once.
    let speed: Double
}

/// `AuditorConfiguration.recording = .replay(path, onMiss:)`: a data task the recording has a
/// response for is answered with it, as the server's would have come, its body paced as recorded.
extension RequestInfoProtocol {
    /// Answers this load from `replay` when it has a response for the request (sent with `body`),
    /// or with a 504 miss under `.fail`, delivered as `delivery` says; false when the request is to
    /// go to the server (a miss under `.pass`). A download task (no `delivery`: FoundationNetworking
    /// completes one only for its own protocol) cannot be answered from a recording: under `.fail`
    /// it fails with ``RequestAuditError/recording(_:)`` rather than reach the network.
    func answerFromRecording(
        _ replay: AppReplay, body: RecordedRequestBody?, delivery: CallerSession.Behaviour?, audited: AuditedRequest,
        checkingHops hopVerdict: (URLRequest) -> RequestAuditError?
    ) -> Bool {
        guard let url = request.url?.absoluteString else { return false }
        let method = request.httpMethod?.uppercased() ?? "GET"
        guard let delivery else {
            guard replay.onMiss == .fail else { return false }
            let reason =
                "a download task cannot be answered from a recording, and replaying with onMiss .fail keeps "
                + "\(method) \(url) off the network"
            fail(with: RequestAuditError.recording(reason).urlError, as: .failure, audited)
            return true
        }
        let this = Reference(self)
        let (found, followed, missed, refusal) = Self.follow(
            replay.recording, method: method, url: url,
            body: bodyDigests(body, replay.recording, method: method, url: url),
            checkingHops: hopVerdict)
        if let refusal {
            refuse(refusal, audited)
            return true
        }
        if let recorded = found {
            // Every header as recorded, as Foundation shows a server's (`Content-Length`,
            // `Transfer-Encoding` and `Connection` included).
            let response = HandlerResponse(
                status: recorded.status, headers: recorded.headers.joinedFields,
                body: .stream(Self.paced(recorded, speed: replay.speed)))
            Task { await this.value.deliverStreaming(response, delivery, audited, kind: .replayed, followed: followed) }
            return true
        }
        guard replay.onMiss == .fail else { return false }
        let miss = Denial.problem(
            "recording-miss", replay.recording.missMessage(method: missed.method, url: missed.url))
        Task { await this.value.deliverStreaming(.gatewayTimeout(miss), delivery, audited, kind: .failure) }
        return true
    }

    /// The digests `recording` matches this load's request on, sent with `body`. A file that cannot
    /// be read matches nothing, as an empty digest.
    private func bodyDigests(
        _ body: RecordedRequestBody?, _ recording: HARReplay, method: String, url: String
    ) -> HARReplay.BodyDigests {
        guard let body else { return .none }
        #if canImport(AuditContentCoding)
            let bodies = recording.matchingBodies(method: method, url: url)
            var digest = ReplayBodyDigest(holdingAtMost: bodies?.largestRedacted ?? 0)
            guard body.forEachPiece({ digest.update($0) }) else {
                return HARReplay.BodyDigests(redacted: nil, sent: [])
            }
            return digest.finalize(headers: request.sortedHeaders, for: recording)
        #else
            return HARReplay.BodyDigests(redacted: nil, sent: body.sha256 ?? [])
        #endif
    }

    /// The recorded response to `method` `url` with a body of `digests`, its recorded redirects followed as
    /// Foundation follows them (at most 20; a 303, or a 301 or 302 to a POST, goes on as a GET
    /// without a body), each hop checked by `hopVerdict` as a live redirect is; the URLs followed;
    /// the request that was not in the recording, if one was not; and the refusal of a hop the
    /// policy blocks, if one does.
    private static func follow(
        _ recording: HARReplay, method: String, url: String, body digests: HARReplay.BodyDigests,
        checkingHops hopVerdict: (URLRequest) -> RequestAuditError?
    ) -> (
        HARReplay.Response?, followed: [URL], missed: (method: String, url: String), refusal: RequestAuditError?
    ) {
        var (method, url, digests) = (method, url, digests)
        var followed: [URL] = []
        while let response = recording.response(method: method, url: url, body: digests) {
            guard [301, 302, 303, 307, 308].contains(response.status), followed.count < 20,
                let location = response.headers.value(named: "location"),
                let next = URL(string: location, relativeTo: URL(string: url))?.absoluteURL,
                next.scheme == "http" || next.scheme == "https"
            else { return (response, followed, (method, url), nil) }
            if response.status == 303 || (response.status <= 302 && method == "POST") {
                (method, digests) = (method == "HEAD" ? "HEAD" : "GET", .none)
            }
            var hop = URLRequest(url: next)
            hop.httpMethod = method
            if let refusal = hopVerdict(hop) { return (nil, followed, (method, url), refusal) }
            url = next.absoluteString
            followed.append(next)
        }
        return (nil, followed, (method, url), nil)
    }

    /// `request` and its body, for a recording: an upload task's body (the task keeps it, and it is
    /// read a piece at a time), or a body stream read to its end, spooled (then sent from a new
    /// stream of the same bytes); without a recording, `request` as it is with its `httpBody`.
    func withRecordableBody(_ request: URLRequest, _ auditor: Auditor) -> (URLRequest, RecordedRequestBody?) {
        guard auditor.usesRecording, request.httpBody == nil else {
            return (request, request.recordedBody)
        }
        if let task = task as? URLSessionUploadTask {
            return (request, PlatformInternals.knownBody(of: task).map(RecordedRequestBody.upload))
        }
        guard let stream = request.httpBodyStream else { return (request, nil) }
        let spooled = SpooledBody(reading: stream)
        var outgoing = request
        outgoing.httpBodyStream = spooled.makeStream()
        return (outgoing, .spooled(spooled))
    }

    /// The recorded body, piece by piece, each when its time after the head comes (divided by
    /// `speed`; at once when it is 0).
    private static func paced(_ recorded: HARReplay.Response, speed: Double) -> AsyncThrowingStream<Data, Error> {
        AsyncThrowingStream { continuation in
            let producer = Task {
                let start = ContinuousClock.now
                var offset = 0
                let chunks =
                    recorded.chunks.count > 1 && speed > 0
                    ? recorded.chunks.map { ($0.milliseconds / speed, $0.size) } : [(0, recorded.body.count)]
                for (milliseconds, size) in chunks where offset < recorded.body.count {
                    try? await Task.sleep(until: start + .microseconds(Int64(milliseconds * 1_000)), clock: .continuous)
                    let end = min(recorded.body.count, offset + size)
                    continuation.yield(Data(recorded.body[offset..<end]))
                    offset = end
                }
                if offset < recorded.body.count { continuation.yield(Data(recorded.body[offset...])) }
                continuation.finish()
            }
            continuation.onTermination = { _ in producer.cancel() }
        }
    }
}

extension HandlerResponse {
    /// A 504 whose JSON body is `problem`, never stored: the answer to a request that was not sent
    /// (a recording's miss, an `only-if-cached` request the cache holds nothing for).
    static func gatewayTimeout(_ problem: Denial) -> HandlerResponse {
        HandlerResponse(
            status: 504, headers: ["Content-Type": "application/json", "Cache-Control": "no-store"],
            body: .data(Data(problem.json.utf8)))
    }
}
