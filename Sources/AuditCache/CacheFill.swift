import AuditLocking
import AuditPolicy
import AuditReport
import Foundation

/// One request the cache had no fresh answer for, on its way to the server: what to send with it,
/// and what to do with what comes back. Other requests for the same URL wait until it ends.
///
/// It ends once: on ``revalidated(by:)``, on a ``store(status:headers:)`` writer's `commit` or
/// `abandon`, on ``finishWithoutStoring()``, or when it is dropped.
public final class CacheFill: Sendable {
    /// The request looked up.
    public let request: CacheRequest
    /// The stored response being revalidated, when there is one (stale, or the request asked for
    /// validation).
    public let stored: StoredResponse?
    private let cache: HTTPCache
    /// The URL's key: requests for the URL wait for this fill.
    private let key: String
    /// The key of ``stored``'s entry (the URL's, or its variant's).
    private let storedKey: String?
    private let requestTime: Date
    private let isEnded = Locked(false)

    init(
        cache: HTTPCache, key: String, request: CacheRequest, stored: StoredResponse?, storedKey: String?,
        requestTime: Date
    ) {
        self.cache = cache
        self.key = key
        self.request = request
        self.stored = stored
        self.storedKey = storedKey
        self.requestTime = requestTime
    }

    deinit { end(isStored: false) }

    /// Headers to add to the request so that the server can answer 304 when the stored response is
    /// still good: `If-None-Match` with its `ETag`, `If-Modified-Since` with its `Last-Modified`.
    /// Empty when there is nothing to revalidate, or the request carries conditions of its own.
    public var conditionalHeaders: [RequestSnapshot.Header] {
        guard let head = stored?.head,
            !request.headers.contains(where: { ["if-none-match", "if-modified-since"].contains($0.name.lowercased()) })
        else { return [] }
        var headers: [RequestSnapshot.Header] = []
        if let etag = head.value("etag") { headers.append(RequestSnapshot.Header(name: "If-None-Match", value: etag)) }
        if let modified = head.value("last-modified") {
            headers.append(RequestSnapshot.Header(name: "If-Modified-Since", value: modified))
        }
        return headers
    }

    /// The stored response to serve when the server cannot be reached (or answers an error, see
    /// ``fallback(replacing:)``): any stored one with the rule's `offline`, else one still within
    /// `stale-if-error`; nil otherwise.
    public var fallback: StoredResponse? {
        guard let stored else { return nil }
        let now = cache.clock()
        let age = Freshness.age(of: stored.head, now: now)
        let lifetime = cache.freshness.lifetime(of: stored.head, settings: request.settings)
        guard
            cache.freshness.servesStaleOnError(
                stored.head, requestControl: request.control, age: age, lifetime: lifetime,
                settings: request.settings)
        else { return nil }
        return StoredResponse(head: stored.head, body: stored.body, exactAge: age)
    }

    /// The stored response to serve in place of the server's answer of `status`, when that answer
    /// is an error as RFC 5861 §4 counts them (500, 502, 503, 504) and ``fallback`` allows one; nil
    /// otherwise (the server's answer is passed on).
    public func fallback(replacing status: Int) -> StoredResponse? {
        Self.errorStatuses.contains(status) ? fallback : nil
    }

    /// What the client gets in place of the server's answer of `status` with `headers`: the stored
    /// response a 304 to the cache's own condition revalidated (``revalidated(by:)``), or a stale one
    /// answering an error instead (``fallback(replacing:)``; the fill then ends without storing),
    /// each as it answers the request looked up (``StoredResponse/answer(to:)``: a byte range gets
    /// its part). Nil when the server's answer is what the client gets.
    public func replacement(forStatus status: Int, headers: [RequestSnapshot.Header]) -> CacheReplacement? {
        if status == 304, let refreshed = revalidated(by: headers) {
            return CacheReplacement(stored: refreshed, answer: refreshed.answer(to: request), kind: .revalidated)
        }
        guard let stale = fallback(replacing: status) else { return nil }
        finishWithoutStoring()
        return CacheReplacement(stored: stale, answer: stale.answer(to: request), kind: .stale)
    }

    /// The server's answers a cache takes for the server failing.
    static let errorStatuses: Set<Int> = [500, 502, 503, 504]

    /// The server's answer to the request sent in the background for a response served stale
    /// (``CacheLookup/staleWhileRevalidating(_:_:)``): a 304 refreshes the stored response, an error
    /// (500, 502, 503, 504) leaves it as it is, and any other answer replaces it. Returns the writer
    /// to stream that answer's body into when it may be stored.
    public func answeredInBackground(status: Int, headers: [RequestSnapshot.Header]) -> CacheEntryWriter? {
        if status == 304 {
            _ = revalidated(by: headers)
            return nil
        }
        if Self.errorStatuses.contains(status) {
            end(isStored: false)
            return nil
        }
        return store(status: status, headers: headers)
    }

    /// The server answered 304 to the conditional request: the stored response, its headers
    /// refreshed by the 304's, is kept and returned to serve. Nil when nothing was being revalidated
    /// (the 304 answers the client's own condition: pass it on).
    public func revalidated(by headers: [RequestSnapshot.Header]) -> StoredResponse? {
        guard let stored, !conditionalHeaders.isEmpty else {
            end(isStored: false)
            return nil
        }
        var head = stored.head
        head.headers = Freshness.refreshed(head.headers, with: headers)
        head.ageValue = Freshness.ageValue(in: headers)
        head.requestTime = requestTime
        head.responseTime = cache.clock()
        let isStored = rewrite(head: head, body: stored.body)
        end(isStored: isStored)
        return StoredResponse(head: head, body: stored.body, exactAge: Freshness.age(of: head, now: cache.clock()))
    }

    /// The server answered with `status` and `headers`: a writer to stream the body into when the
    /// response may be stored, nil (and the fill ended) when it may not.
    public func store(status: Int, headers: [RequestSnapshot.Header]) -> CacheEntryWriter? {
        if status >= 200, status != 304, status < 500, let storedKey {
            // A new answer replaces what was stored, whether or not it is stored itself.
            cache.store.remove(key: storedKey)
        }
        let refusal = cache.freshness.refusal(of: request, status: status, headers: headers)
        guard refusal == nil, let (path, descriptor) = cache.store.makeTemporaryFile() else {
            end(isStored: false)
            return nil
        }
        let names = headers.filter { $0.name.lowercased() == "vary" }.flatMap { $0.value.split(separator: ",") }
            .map { $0.trimmingSpaces.lowercased() }.filter { !$0.isEmpty }
        let varied = request.values(of: names)
        let head = StoredHead(
            url: request.url, status: status,
            headers: headers.filter { !Freshness.unstoredHeaders.contains($0.name.lowercased()) },
            requestTime: requestTime, responseTime: cache.clock(), varied: varied,
            ageValue: Freshness.ageValue(in: headers), bodyLength: 0, rule: request.rule)
        return CacheEntryWriter(
            fill: self, head: head, key: cache.entryKey(urlKey: key, url: request.url, varied: varied), path: path,
            descriptor: descriptor, maximumBytes: cache.store.entryLimit)
    }

    /// The response is not stored (the exchange failed, or the front-end would not store it).
    public func finishWithoutStoring() { end(isStored: false) }

    func commit(path: String, descriptor: Int32, head: StoredHead, key entryKey: String, body: [UInt8]?) -> Bool {
        let isStored = cache.store.commit(
            path: path, descriptor: descriptor, bodyLength: head.bodyLength, head: head, key: entryKey,
            now: cache.clock(), body: body)
        end(isStored: isStored)
        return isStored
    }

    /// Writes `head` with the stored body in a new entry file in place of the old one.
    private func rewrite(head: StoredHead, body: StoredBody) -> Bool {
        guard let (path, descriptor) = cache.store.makeTemporaryFile() else { return false }
        var offset = 0
        while offset < body.length {
            let chunk = body.chunk(at: offset)
            guard !chunk.isEmpty, POSIXFile.writeAll(chunk, to: descriptor) else {
                POSIXFile.close(descriptor)
                POSIXFile.remove(path)
                return false
            }
            offset += chunk.count
        }
        return cache.store.commit(
            path: path, descriptor: descriptor, bodyLength: body.length, head: head, key: storedKey ?? key,
            now: cache.clock(),
            body: body.length <= CacheStore.memoryBodyLimit ? body.readAll() : nil)
    }

    func end(isStored: Bool) {
        let isFirst = isEnded.withLock { isEnded in
            defer { isEnded = true }
            return !isEnded
        }
        if isFirst { cache.release(key: key, isStored: isStored) }
    }
}

/// Streams one response's body into the cache; the entry is in place only after ``commit()``.
///
/// Used by one exchange at a time (the front-end that received the response).
public final class CacheEntryWriter: Sendable {
    private let fill: CacheFill
    private let state: Locked<State>
    private let maximumBytes: Int

    private struct State {
        var head: StoredHead
        /// The key of the entry it becomes.
        let key: String
        let path: String
        let descriptor: Int32
        var isOpen = true
        /// The body so far while it is small enough to hold in memory beside its head.
        var small: [UInt8]? = []
    }

    init(fill: CacheFill, head: StoredHead, key: String, path: String, descriptor: Int32, maximumBytes: Int) {
        self.fill = fill
        self.maximumBytes = maximumBytes
        state = Locked(State(head: head, key: key, path: path, descriptor: descriptor))
    }

    deinit { abandon() }

    /// Appends body bytes; a body over the cache's entry limit (``CacheStore/entryLimit``) or a failed
    /// write abandons the entry.
    public func append(_ bytes: some Collection<UInt8>) {
        let failed = state.withLock { state -> Bool in
            guard state.isOpen else { return false }
            state.head.bodyLength += bytes.count
            let chunk = Array(bytes)
            guard state.head.bodyLength <= maximumBytes, POSIXFile.writeAll(chunk, to: state.descriptor) else {
                return true
            }
            if state.head.bodyLength <= CacheStore.memoryBodyLimit {
                state.small?.append(contentsOf: chunk)
            } else {
                state.small = nil
            }
            return false
        }
        if failed { abandon() }
    }

    /// The body is whole: the entry is put in place. Returns whether it was stored.
    @discardableResult
    public func commit() -> Bool {
        guard
            let (path, descriptor, head, key, small) = state.withLock({
                state -> (String, Int32, StoredHead, String, [UInt8]?)? in
                guard state.isOpen else { return nil }
                state.isOpen = false
                return (state.path, state.descriptor, state.head, state.key, state.small)
            })
        else { return false }
        return fill.commit(path: path, descriptor: descriptor, head: head, key: key, body: small)
    }

    /// The body will not come whole: nothing is stored.
    public func abandon() {
        guard
            let (path, descriptor) = state.withLock({ state -> (String, Int32)? in
                guard state.isOpen else { return nil }
                state.isOpen = false
                return (state.path, state.descriptor)
            })
        else { return }
        POSIXFile.close(descriptor)
        POSIXFile.remove(path)
        fill.finishWithoutStoring()
    }

    /// Whether the entry is still being written (not committed, abandoned or over the limit).
    public var isOpen: Bool { state.withLock { $0.isOpen } }
}

/// A stored response the client gets in place of the server's answer (``CacheFill/replacement(forStatus:headers:)``).
public struct CacheReplacement: Sendable {
    /// The stored response.
    public let stored: StoredResponse
    /// Its answer to the client's request: status, headers and the bytes of the body to send.
    public let answer: CacheAnswer
    /// How the exchange is recorded: `revalidated` or `stale`.
    public let kind: OutcomeSnapshot.Kind
}
