import AuditCache
import AuditLocking
import AuditPipeline
import AuditPolicy
import AuditReport
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Cache rules in an app: a data task a cache rule matches is looked up before it is relayed; a
/// fresh stored response answers it as the server's would (every caller style), and the server's
/// response is stored as it is relayed.
extension RequestInfoProtocol {
    /// The cache's view of this load's request, when a cache rule of `audited` matched it.
    func cacheRequest(_ audited: AuditedRequest) -> CacheRequest? {
        guard let rule = audited.verdict.cacheRule, let settings = rule.cacheSettings, let url = cacheURL() else {
            return nil
        }
        return CacheRequest(
            method: request.httpMethod?.uppercased() ?? "GET", url: url, headers: request.sortedHeaders, rule: rule.id,
            settings: settings)
    }

    /// The URL whose stored response this load drops once the server answers it without an error
    /// (``HTTPCache/changesResource(method:)``).
    func invalidatedURL() -> String? {
        guard let method = request.httpMethod?.uppercased(), HTTPCache.changesResource(method: method) else {
            return nil
        }
        return cacheURL()
    }

    /// This load's URL as the cache keys it: canonical, or as given when it has no canonical form.
    private func cacheURL() -> String? {
        guard let url = request.url?.absoluteString else { return nil }
        return (try? CanonicalURL(url))?.string ?? url
    }

    /// Relays `request` (this load's, its body readable) through the cache: served from it when
    /// fresh; sent with its conditions when it revalidates; sent and stored otherwise; served stale
    /// within `stale-while-revalidate` while the forwarding session of `forwarder` revalidates it in
    /// the background. Concurrent lookups of one URL wait for the first one's response. What is
    /// served from the cache goes into `recorder`'s recording, if any.
    func relayThroughCache(
        _ cache: HTTPCache, _ lookup: CacheRequest, request: URLRequest, behaviour: CallerSession.Behaviour,
        forwarder: Forwarder, send: @escaping @Sendable (URLRequest, RelayedLoad.CacheUse?) -> Void,
        audited: AuditedRequest, recorder: HARRecorder?
    ) {
        let this = Reference(self)
        cache.lookup(lookup) { found in
            switch found {
            case .bypass:
                send(request, nil)
            case .fresh(let stored):
                this.value.serveStored(
                    stored, answering: lookup, kind: .cached, behaviour: behaviour, audited: audited,
                    recorder: recorder)
            case .send(let fill):
                send(Self.adding(fill.conditionalHeaders, to: request), .filling(fill))
            case .staleWhileRevalidating(let stored, _), .stale(let stored):
                this.value.serveStored(
                    stored, answering: lookup, kind: .stale, behaviour: behaviour, audited: audited,
                    recorder: recorder)
                guard case .staleWhileRevalidating(_, let fill?) = found else { return }
                var revalidation = Self.adding(fill.conditionalHeaders, to: request)
                revalidation.httpMethod = "GET"
                BackgroundRevalidation.start(revalidation, fill: fill, on: forwarder)
            case .unsatisfiable:
                let problem = Denial.problem(
                    "not-cached", CacheLookup.unsatisfiableMessage(method: lookup.method, url: lookup.url))
                Task { await this.value.deliverStreaming(.gatewayTimeout(problem), behaviour, audited, kind: .failure) }
            }
        }
    }

    /// `request` with `headers` set on it.
    private static func adding(_ headers: [RequestSnapshot.Header], to request: URLRequest) -> URLRequest {
        var request = request
        for header in headers { request.setValue(header.value, forHTTPHeaderField: header.name) }
        return request
    }

    /// Answers the caller with a stored response as it answers `lookup` (``StoredResponse/answer(to:)``:
    /// 304 to a satisfied condition of the caller's own, a part to a byte range), as the server's
    /// would have come: the head, then the body read from the cache a chunk at a time (each on the
    /// caller's queue before the next is read); recorded as `kind`, and into `recorder`'s recording
    /// as served.
    func serveStored(
        _ stored: StoredResponse, answering lookup: CacheRequest, kind: OutcomeSnapshot.Kind,
        behaviour: CallerSession.Behaviour, audited: AuditedRequest, recorder: HARRecorder?
    ) {
        let answer = stored.answer(to: lookup)
        if let recorder {
            var exchange = RecordedExchange(
                request: request, body: request.recordedBody,
                keepingAtMost: recorder.maximumBodyBytes)
            exchange.respond(status: answer.status, headers: answer.headers, waitMilliseconds: 0)
            if !answer.body.isEmpty {
                stored.body.record(answer.body, into: &exchange, keepingAtMost: recorder.maximumBodyBytes)
            }
            recorder.add(exchange)
        }
        let chunks = AsyncThrowingStream<Data, Error>(unfolding: Self.reader(of: stored.body, answer.body))
        let response = HandlerResponse(
            status: answer.status, headers: answer.headers.joinedFields,
            body: answer.body.isEmpty ? .data(Data()) : .stream(chunks))
        let this = Reference(self)
        Task { await this.value.deliverStreaming(response, behaviour, audited, kind: kind) }
    }

    /// Reads the bytes `range` of `body`, a chunk per call; nil at their end.
    private static func reader(of body: StoredBody, _ range: Range<Int>) -> @Sendable () async -> Data? {
        let cursor = Cursor(range.lowerBound)
        return {
            cursor.offset.withLock { offset in
                let chunk = body.chunk(at: offset, maximum: min(64 * 1024, range.upperBound - offset))
                offset += chunk.count
                return chunk.isEmpty ? nil : Data(chunk)
            }
        }
    }

    /// Where a stored body's reader is.
    private final class Cursor: Sendable {
        let offset: Locked<Int>

        init(_ offset: Int) { self.offset = Locked(offset) }
    }
}
