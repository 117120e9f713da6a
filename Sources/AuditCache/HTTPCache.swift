import AuditLocking
import AuditPolicy
import AuditReport
import Foundation

/// A request as the cache sees it: its method, canonical URL and headers, and the settings of the
/// cache rule that matched it.
public struct CacheRequest: Sendable {
    /// The method, upper-case.
    public let method: String
    /// The canonical URL.
    public let url: String
    /// The request's headers.
    public let headers: [RequestSnapshot.Header]
    /// The matching cache rule's id.
    public let rule: String
    /// The matching cache rule's settings.
    public let settings: CacheSettings
    /// The request's `Cache-Control`, read once: a lookup asks it several questions.
    let control: CacheControl

    /// A request to look up.
    public init(method: String, url: String, headers: [RequestSnapshot.Header], rule: String, settings: CacheSettings) {
        self.method = method
        self.url = url
        self.headers = headers
        self.rule = rule
        self.settings = settings
        control = CacheControl(headers.filter { $0.name.equalsIgnoringASCIICase("cache-control") }.map(\.value))
    }

    /// Whether the request asks not to be answered from the cache without checking with the server
    /// (`Cache-Control: no-cache`, or `Pragma: no-cache` without `Cache-Control`).
    var asksForValidation: Bool {
        let control = control
        if control.has("no-cache") { return true }
        guard control.directives.isEmpty else { return false }
        return headers.contains { $0.name.lowercased() == "pragma" && $0.value.lowercased().contains("no-cache") }
    }

    /// The request's value of each header of `names` (nil for one it lacks): what a `Vary` naming
    /// them compares.
    func values(of names: some Sequence<String>) -> [String: String?] {
        var values: [String: String?] = [:]
        for name in names { values[name] = .some(value(name)) }
        return values
    }

    func value(_ name: String) -> String? {
        // Asked several times a hit, mostly of headers the request does not have: nothing is
        // allocated for those.
        var joined: String?
        for header in headers where header.name.equalsIgnoringASCIICase(name) {
            joined = joined.map { $0 + ", " + header.value } ?? header.value
        }
        return joined
    }
}

/// What the cache has for a request.
public enum CacheLookup: Sendable {
    /// Not the cache's: send the request as if there were no cache rule (a method other than GET
    /// and HEAD, `no-store`, or a request that waited for another's response that was not stored).
    case bypass
    /// A fresh stored response: serve it; nothing is sent.
    case fresh(StoredResponse)
    /// Send the request (with ``CacheFill/conditionalHeaders`` added, when the fill revalidates a
    /// stored response), then hand the response to the fill.
    case send(CacheFill)
    /// A stale stored response still within its `stale-while-revalidate`: serve it now (recorded
    /// `stale`). With a fill, also send the request with its conditional headers in the background
    /// and hand the response to the fill; without one, another request is revalidating it already.
    case staleWhileRevalidating(StoredResponse, CacheFill?)
    /// A stale stored response the request takes as it is (`max-stale`, RFC 9111 §5.2.1.2): serve
    /// it (recorded `stale`); nothing is sent.
    case stale(StoredResponse)
    /// The request takes only a stored response (`only-if-cached`, RFC 9111 §5.2.1.7) and none
    /// answers it: answer 504 (Gateway Timeout); nothing is sent.
    case unsatisfiable

    /// What a client is told when its `only-if-cached` request finds nothing to answer it.
    public static func unsatisfiableMessage(method: String, url: String) -> String {
        "the request asks only for a stored response (Cache-Control: only-if-cached), and the cache holds none "
            + "that answers \(method) \(url)"
    }
}

/// RFC 9111 caching of responses, on disk: what a `cache` rule asks every front-end to do.
///
/// ```swift
/// let cache = try HTTPCache(directory: "/var/cache/audit", maximumBytes: 1 << 30, isShared: true)
/// cache.lookup(request) { lookup in
///     switch lookup {
///     case .bypass: … send as usual
///     case .fresh(let stored): … serve stored.answer(to: request)
///     case .send(let fill): … send with fill.conditionalHeaders, then serve
///         // fill.replacement(forStatus:headers:) when there is one (a 304 revalidated, an error
///         // answered stale), else store with fill.store(status:headers:); fill.fallback when
///         // the network fails
///     }
/// }
/// ```
///
/// Concurrent lookups of one URL that find nothing fresh make one request to the server: the
/// first gets ``CacheLookup/send(_:)``, the others wait until its fill ends, then get what it
/// stored (or ``CacheLookup/bypass`` when it stored nothing).
public final class HTTPCache: Sendable {
    /// The folder of the entries.
    public var directory: String { store.directory }
    /// The bound on the entries' bytes.
    public var maximumBytes: Int { store.maximumBytes }
    let store: CacheStore
    let freshness: Freshness
    let clock: @Sendable () -> Date
    private let waiting = Locked<[String: [Waiter]]>([:])

    typealias Waiter = @Sendable (_ isStored: Bool) -> Void

    /// Opens the cache kept in `directory` (created when missing), bounded at `maximumBytes`.
    ///
    /// - Parameters:
    ///   - isShared: whether the cache serves many users (`audit proxy`): it then honours
    ///     `s-maxage` and never stores `Cache-Control: private` responses.
    ///   - clock: the time now; a test moves it by hand.
    public init(
        directory: String, maximumBytes: Int, isShared: Bool, clock: @escaping @Sendable () -> Date = { Date() }
    ) throws(CacheError) {
        store = try CacheStore(directory: directory, maximumBytes: maximumBytes)
        freshness = Freshness(isShared: isShared)
        self.clock = clock
    }

    /// Whether a process (this one or another) has the cache folder `directory` open: an
    /// ``HTTPCache`` of it exists and has not been released.
    public static func isInUse(directory: String) -> Bool { CacheStore.isInUse(directory: directory) }

    /// Looks `request` up, calling `then` once with what to do: at once, or when the fill another
    /// request of the same URL is making ends.
    public func lookup(_ request: CacheRequest, then: @escaping @Sendable (CacheLookup) -> Void) {
        guard request.method == "GET" || request.method == "HEAD", !request.control.has("no-store") else {
            return then(.bypass)
        }
        let key = CacheStore.key(for: request.url)
        let found = usable(for: request, urlKey: key)
        let stored = found?.stored
        if let stored, isFresh(stored, for: request) { return then(.fresh(stored)) }
        if let stored, acceptsStale(stored, for: request) { return then(.stale(stored)) }
        if request.control.has("only-if-cached") { return then(.unsatisfiable) }
        if let stored, servesWhileRevalidating(stored, for: request) {
            // Served at once; one request at a time revalidates it, none waits for it.
            let fill =
                claimFill(of: key, orWait: nil)
                ? CacheFill(
                    cache: self, key: key, request: request, stored: stored, storedKey: found?.key,
                    requestTime: clock()) : nil
            return then(.staleWhileRevalidating(stored, fill))
        }
        // HEAD is answered from a stored GET, never stored itself.
        if request.method == "HEAD" { return then(.bypass) }
        let waiter: Waiter = { [self] isStored in
            guard isStored else { return then(.bypass) }
            lookup(request, then: then)
        }
        guard claimFill(of: key, orWait: waiter) else { return }
        then(
            .send(
                CacheFill(
                    cache: self, key: key, request: request, stored: stored, storedKey: found?.key,
                    requestTime: clock())))
    }

    /// The stored response that answers `request` (its `Vary` headers agree) and its entry's key: the
    /// URL's own entry (`urlKey`), or the entry of the request's variant when the URL's own is of
    /// another.
    private func usable(for request: CacheRequest, urlKey: String) -> (key: String, stored: StoredResponse)? {
        let now = clock()
        guard let (head, body) = store.read(key: urlKey, now: now), head.url == request.url else { return nil }
        var key = urlKey
        var entry = (head: head, body: body)
        if head.varied.contains(where: { request.value($0.key) != $0.value }) {
            let varied = request.values(of: head.varied.keys)
            key = CacheStore.variantKey(of: urlKey, varied: varied)
            guard let variant = store.read(key: key, now: now), variant.head.url == request.url,
                variant.head.varied == varied
            else { return nil }
            entry = variant
        }
        return (
            key, StoredResponse(head: entry.head, body: entry.body, exactAge: Freshness.age(of: entry.head, now: now))
        )
    }

    /// The key of the entry to keep a response to `url` in, whose `Vary` gave `varied` (RFC 9111 §4.1:
    /// a cache may keep a response for each variant): the URL's own entry (`urlKey`), unless that one
    /// holds another variant of the same headers, which is kept beside it. A response that varies on
    /// other headers, or not at all, takes the URL's entry and drops the variants beside it.
    func entryKey(urlKey: String, url: String, varied: [String: String?]) -> String {
        guard let current = store.read(key: urlKey, now: nil)?.head, current.url == url else { return urlKey }
        if !varied.isEmpty, Set(current.varied.keys) == Set(varied.keys) {
            return current.varied == varied ? urlKey : CacheStore.variantKey(of: urlKey, varied: varied)
        }
        store.removeVariants(of: urlKey)
        return urlKey
    }

    private func isFresh(_ stored: StoredResponse, for request: CacheRequest) -> Bool {
        let control = stored.head.cacheControl
        if control.has("no-cache") || request.asksForValidation { return false }
        let age = stored.exactAge
        let lifetime = freshness.lifetime(of: stored.head, settings: request.settings)
        if let limit = request.control.seconds("max-age"), age > Double(limit) { return false }
        if let margin = request.control.seconds("min-fresh") { return age + Double(margin) < lifetime }
        return age < lifetime
    }

    /// Whether the request takes `stored`, stale, as it is: it says `max-stale` (without a value:
    /// however stale; with one: at most that many seconds past its freshness), within its own
    /// `max-age`, and the stored response does not forbid serving it stale.
    private func acceptsStale(_ stored: StoredResponse, for request: CacheRequest) -> Bool {
        guard let value = request.control.directives["max-stale"], let staleness = staleness(stored, for: request)
        else { return false }
        if let limit = request.control.seconds("max-age"), stored.exactAge > Double(limit) { return false }
        guard !value.isEmpty else { return true }
        return request.control.seconds("max-stale").map { staleness < Double($0) } ?? false
    }

    /// How many seconds `stored` is past its freshness, when it may be served stale to `request` at
    /// all: neither asks for validation first, and the response does not forbid it.
    private func staleness(_ stored: StoredResponse, for request: CacheRequest) -> Double? {
        guard !request.asksForValidation, !freshness.forbidsServingStale(stored.head.cacheControl) else { return nil }
        return stored.exactAge - freshness.lifetime(of: stored.head, settings: request.settings)
    }

    /// Claims the fill of `key` for the caller: true when no other request is filling it; otherwise
    /// `waiter`, when given, is called when that fill ends.
    private func claimFill(of key: String, orWait waiter: Waiter?) -> Bool {
        waiting.withLock { waiting in
            guard waiting[key] == nil else {
                if let waiter { waiting[key]?.append(waiter) }
                return false
            }
            waiting[key] = []
            return true
        }
    }

    /// Whether a stale `stored` response may answer `request` while it is revalidated
    /// (`stale-while-revalidate`, RFC 5861 §3): within that many seconds past its freshness, unless
    /// it or the request asks to be validated first.
    private func servesWhileRevalidating(_ stored: StoredResponse, for request: CacheRequest) -> Bool {
        guard let window = stored.head.cacheControl.seconds("stale-while-revalidate"),
            request.control.seconds("max-age") == nil, let staleness = staleness(stored, for: request)
        else { return false }
        return staleness < Double(window)
    }

    /// Ends the fill of `key`: the requests that waited look up again (when something was stored)
    /// or go on without the cache.
    func release(key: String, isStored: Bool) {
        let waiters = waiting.withLock { $0.removeValue(forKey: key) ?? [] }
        for waiter in waiters { waiter(isStored) }
    }

    /// Every stored entry's head and size, most recently used first.
    public func entries() -> [StoredHead] {
        store.keys().compactMap { key in store.read(key: key, now: nil)?.head }
    }

    /// The number of entries and their bytes on disk.
    public var usage: (entries: Int, bytes: Int) { store.usage }

    /// Removes every entry whose URL `matches` accepts; returns how many.
    @discardableResult
    public func purge(where matches: (String) -> Bool) -> Int {
        var removed = 0
        for key in store.keys() {
            guard let head = store.read(key: key, now: nil)?.head, matches(head.url) else { continue }
            store.remove(key: key)
            removed += 1
        }
        return removed
    }

    /// Drops the stored response to `url`: a request that changes it (``changesResource(method:)``)
    /// got a non-error answer (RFC 9111 §4.4).
    public func invalidate(url: String) {
        let key = CacheStore.key(for: url)
        store.remove(key: key)
        store.removeVariants(of: key)
    }

    /// Whether a request of `method` (POST, PUT, PATCH, DELETE) can change what its URL answers:
    /// its URL's stored response is dropped once the server answers it without an error, whatever
    /// rule matched it.
    public static func changesResource(method: String) -> Bool {
        switch method {
        case "POST", "PUT", "PATCH", "DELETE": true
        default: false
        }
    }
}
