import AuditCache
import AuditContentCoding
import AuditPipeline
import AuditPolicy
import AuditReport
import Foundation
import NIOCore
import NIOHTTP1

/// `--record FILE.har`: every exchange answered by the server or the cache is written to the
/// recording as it ends, as the client got it: its body's pieces timed as they came, a stored
/// response served in place of the server's (revalidated, stale) or from the cache as served. The
/// body is kept as the client's application reads it, its content coding (`gzip`, `deflate`, `br`)
/// undone piece by piece: what HAR's `content.text` holds, and what redaction can read.
extension ProxyHandler {
    /// What is kept of the exchange under way for the recording.
    struct RecordingCapture {
        var exchange: RecordedExchange
        let start = ContinuousClock.now
        var responseStart: ContinuousClock.Instant?
        /// Whether the server's response has ended (the request may still be under way).
        var isResponseEnded = false
        /// Whether the client's request has ended.
        var isRequestEnded = false
        /// Whether the request's head announces a body (``HTTPRequestHead/hasBody``).
        let announcesBody: Bool

        /// The largest body the recording keeps (``HARRecorder/maximumBodyBytes``).
        let maximumBody: Int

        init(head: HTTPRequestHead, url: String, maximumBody: Int) {
            self.maximumBody = maximumBody
            announcesBody = head.hasBody
            exchange = RecordedExchange(
                started: Date(), method: head.method.rawValue, url: (try? CanonicalURL(url))?.string ?? url,
                requestHeaders: head.headers.snapshot,
                requestBody: nil, status: 0, statusText: "", responseHeaders: [], chunks: [], waitMilliseconds: 0)
        }

        mutating func request(_ part: HTTPServerRequestPart) {
            switch part {
            case .head: break
            case .body(let buffer): exchange.appendRequestBody(buffer.readableBytesView, keepingAtMost: maximumBody)
            case .end: isRequestEnded = true
            }
        }

        mutating func response(_ part: HTTPClientResponsePart) {
            switch part {
            case .head(let head) where head.status.code / 100 == 1:
                break
            case .head(let head):
                let now = ContinuousClock.now
                responseStart = now
                exchange.waitMilliseconds = (now - start).milliseconds
                exchange.status = Int(head.status.code)
                exchange.statusText = head.status.reasonPhrase
                exchange.responseHeaders = head.headers.snapshot
            case .body(let buffer):
                let offset = responseStart.map { (ContinuousClock.now - $0).milliseconds } ?? 0
                exchange.appendBody(Array(buffer.readableBytesView), at: offset, keepingAtMost: maximumBody)
            case .end:
                isResponseEnded = true
            }
        }

        /// The bytes `range` of a stored response's body served after its head, as one piece.
        mutating func stored(_ body: StoredBody, _ range: Range<Int>) {
            let offset = responseStart.map { (ContinuousClock.now - $0).milliseconds } ?? 0
            body.record(range, into: &exchange, at: offset, keepingAtMost: maximumBody)
        }

        /// The exchange, its bodies' content codings undone (or named, when they cannot be).
        var decodedExchange: RecordedExchange {
            var exchange = exchange
            exchange.undoRequestBodyCoding(keepingAtMost: maximumBody)
            exchange.undoResponseBodyCoding(keepingAtMost: maximumBody)
            return exchange
        }
    }

    /// Starts capturing the exchange of `head` to `url` when the proxy records.
    func startRecording(_ head: HTTPRequestHead, url: String) {
        recording = configuration.recorder.map {
            RecordingCapture(head: head, url: url, maximumBody: $0.maximumBodyBytes)
        }
    }

    /// Writes the captured exchange to the recording once its response ended.
    func finishRecording() {
        guard let recording, let recorder = configuration.recorder else { return }
        self.recording = nil
        guard recording.exchange.status > 0 else { return }
        var exchange = recording.decodedExchange
        exchange.isRequestBodyIncomplete = !recording.isRequestEnded && recording.announcesBody
        recorder.add(exchange)
    }
}
