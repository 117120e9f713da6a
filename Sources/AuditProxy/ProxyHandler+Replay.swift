import AuditContentCoding
import AuditPipeline
import AuditReport
import Foundation
import NIOCore
import NIOHTTP1

/// `--replay FILE.har`: a request the recording has a response for is answered with it, its body
/// paced as it came; a miss answers 504 (`--on-miss fail`) or goes on as it would without the
/// recording (`pass`: through the cache first when a cache rule matches it). A request whose method
/// and URL the recording has no response for is a miss at once, before its body is read, and so is
/// one whose body is announced with a size no recorded response matches, or grows larger than the
/// largest: only a request that may match awaits its body's end, on which it is matched. So the
/// proxy holds at most that much of a body under `--on-miss pass`, and under `fail` at most the
/// largest body the recording matches on its redacted form (``ReplayBodyDigest``).
extension ProxyHandler {
    /// A request waiting for its body's end, to be matched against the recording.
    struct PendingReplay {
        let id: UUID
        let method: String
        let url: String
        let isHead: Bool
        /// The request's headers, which say how its body is coded and of what type.
        let headers: [RequestSnapshot.Header]
        /// Sends the request on, or looks it up in the cache first (a miss under `--on-miss pass`).
        let send: () -> Void
        /// The size of the largest body a recorded response matches (`Int.max`: any size).
        let largestMatch: Int
        /// The body so far, as it is matched.
        var body: ReplayBodyDigest
    }

    /// Holds the exchange for the replay: its request is read on until its body has come (asked for
    /// with `100 Continue` when the client waits for it), then matched (``matchRecording(_:)``).
    func awaitReplay(
        _ exchange: Exchange, head: HTTPRequestHead, url: String, bodies: HARReplay.MatchingBodies,
        send: @escaping () -> Void
    ) {
        if head.expectsContinue, head.hasBody {
            let interim = HTTPResponseHead(version: head.version, status: .continue)
            context?.writeAndFlush(wrapOutboundOut(.head(interim)), promise: nil)
        }
        connection.awaitReplay(exchange, keepsParts: configuration.replayMiss.sendsToServer)
        pendingReplay = PendingReplay(
            id: exchange.decision.id, method: head.method.rawValue, url: url, isHead: head.method == .HEAD,
            headers: head.headers.snapshot, send: send,
            largestMatch: bodies.largest, body: ReplayBodyDigest(holdingAtMost: bodies.largestRedacted))
        resumeClientReads()
    }

    /// Takes a piece of the body of the request that awaits its replay into its digest. A body that
    /// grows past the largest a recorded response matches is a miss there and then.
    func takeReplayBody(_ buffer: ByteBuffer) {
        guard pendingReplay != nil else { return }
        pendingReplay?.body.update(buffer.readableBytesView)
        guard let pending = pendingReplay, pending.body.byteCount > pending.largestMatch else { return }
        missedReplay(pending)
    }

    /// The request of `id` has ended: answers it from the recording, or as a miss.
    func matchRecording(_ id: UUID) {
        guard let pending = pendingReplay, pending.id == id, let replay = configuration.replay else { return }
        let digests = pending.body.finalize(headers: pending.headers, for: replay)
        guard let recorded = replay.response(method: pending.method, url: pending.url, body: digests) else {
            return missedReplay(pending)
        }
        pendingReplay = nil
        serveRecorded(recorded, id: id, isHead: pending.isHead)
    }

    /// The request that awaited its replay is not in the recording: it goes on with the parts read
    /// so far (`--on-miss pass`), or is answered 504 (`fail`).
    private func missedReplay(_ pending: PendingReplay) {
        pendingReplay = nil
        guard let replay = configuration.replay else { return }
        guard configuration.replayMiss.sendsToServer else {
            return answerReplayMiss(pending.id, method: pending.method, url: pending.url, replay: replay)
        }
        if connection.replayMissed(for: pending.id) { pending.send() }
    }

    /// Answers the exchange of `id`, a request of `method` to `url` that `replay` has no response
    /// for, with 504 and a JSON body naming it and the recording (`--on-miss fail`).
    func answerReplayMiss(_ id: UUID, method: String, url: String, replay: HARReplay) {
        let message = replay.missMessage(method: method, url: url) + " (--on-miss pass sends such requests on)"
        answerWithoutUpstream(
            id, .gatewayTimeout, { _ in .problem("recording-miss", message) }, kind: .failure, reason: message)
    }

    /// Answers the exchange of `id` with a recorded response: its head at once, then its body's
    /// pieces as far apart as they came (divided by `--replay-speed`; 0: at once).
    private func serveRecorded(_ response: HARReplay.Response, id: UUID, isHead: Bool) {
        guard let context, let (exchange, next) = connection.answerWithoutUpstream(for: id) else { return }
        let speed = configuration.replaySpeed
        // A HEAD response has no body to have been kept decoded: its headers go out as they came.
        let kept = isHead ? response.endToEndHeaders : response.headersForKeptBody
        var headers = HTTPHeaders(kept.map { ($0.name, $0.value) })
        let isPaced = speed > 0 && response.chunks.count > 1
        let wasChunked = response.headers.value(named: "transfer-encoding") != nil
        // A HEAD response with the length the server gave it; a stream chunked, as it came; anything
        // else with its length.
        if isHead {
            headers.add(name: "Content-Length", value: response.headers.value(named: "content-length") ?? "0")
        } else if !(isPaced && wasChunked) {
            headers.add(name: "Content-Length", value: String(response.body.count))
        }
        if !exchange.isClientKeepAlive { headers.add(name: "Connection", value: "close") }
        let status = HTTPResponseStatus(statusCode: response.status, reasonPhrase: response.statusText)
        context.writeAndFlush(
            wrapOutboundOut(.head(HTTPResponseHead(version: exchange.version, status: status, headers: headers))),
            promise: nil)
        var pieces: [(milliseconds: Double, bytes: ArraySlice<UInt8>)] = []
        if isHead {
            pieces = []
        } else if isPaced {
            var offset = 0
            for chunk in response.chunks where offset < response.body.count {
                let end = min(response.body.count, offset + chunk.size)
                pieces.append((chunk.milliseconds / speed, response.body[offset..<end]))
                offset = end
            }
            if offset < response.body.count {
                pieces.append((pieces.last?.milliseconds ?? 0, response.body[offset...]))
            }
        } else if !response.body.isEmpty {
            pieces = [(0, response.body[...])]
        }
        let outcome = Outcome(
            .replayed, status: response.status, bytes: isHead ? 0 : response.body.count, destination: .none)
        writePieces(pieces[...], after: 0) { [self] in endLocalResponse(exchange, outcome, next: next, context: context)
        }
    }

    /// Writes each piece when its time (milliseconds after the head) comes, then calls `then`.
    private func writePieces(
        _ pieces: ArraySlice<(milliseconds: Double, bytes: ArraySlice<UInt8>)>, after elapsed: Double,
        then: @escaping () -> Void
    ) {
        guard let context, let piece = pieces.first else { return then() }
        let write = { [self] in
            guard let context = self.context else { return }
            context.writeAndFlush(wrapOutboundOut(.body(.byteBuffer(ByteBuffer(bytes: piece.bytes)))), promise: nil)
            writePieces(pieces.dropFirst(), after: max(elapsed, piece.milliseconds), then: then)
        }
        let wait = piece.milliseconds - elapsed
        guard wait >= 1 else { return write() }
        context.eventLoop.assumeIsolated().scheduleTask(in: .microseconds(Int64(wait * 1_000))) { write() }
    }
}
