import AuditCache
import AuditPolicy
import AuditReport
import Foundation
import Synchronization
import Testing

/// A clock moved by hand.
final class ManualClock: Sendable {
    private let now = Mutex(Date(timeIntervalSince1970: 1_800_000_000))
    var date: Date { now.withLock { $0 } }
    func advance(_ seconds: Double) { now.withLock { $0 += seconds } }
}

/// A cache in a fresh temporary folder, with a clock moved by hand.
struct CacheFixture {
    let folder: String
    let clock = ManualClock()
    let cache: HTTPCache

    init(maximumBytes: Int = 8 << 20, isShared: Bool = true, folder: String? = nil) throws {
        self.folder = folder ?? NSTemporaryDirectory() + "cache-" + UUID().uuidString
        let clock = clock
        cache = try HTTPCache(
            directory: self.folder, maximumBytes: maximumBytes, isShared: isShared, clock: { clock.date })
    }

    func request(
        _ url: String = "http://a.test/x", method: String = "GET", headers: [(String, String)] = [],
        settings: CacheSettings = CacheSettings()
    ) -> CacheRequest {
        CacheRequest(
            method: method, url: url, headers: headers.map { RequestSnapshot.Header(name: $0.0, value: $0.1) },
            rule: "speed/all",
            settings: settings)
    }

    /// What a lookup gives at once.
    func lookup(_ request: CacheRequest) -> CacheLookup {
        let result = Mutex<CacheLookup?>(nil)
        cache.lookup(request) { lookup in result.withLock { $0 = lookup } }
        guard let lookup = result.withLock({ $0 }) else {
            Issue.record("the lookup waited")
            return .bypass
        }
        return lookup
    }

    /// Looks `request` up, expects a send, and answers it with `status`, `headers` and `body`;
    /// returns whether the response was stored.
    @discardableResult
    func fetch(
        _ request: CacheRequest, status: Int = 200, headers: [(String, String)], body: String = "hello"
    ) -> Bool {
        guard case .send(let fill) = lookup(request) else {
            Issue.record("expected a send")
            return false
        }
        guard
            let writer = fill.store(
                status: status, headers: headers.map { RequestSnapshot.Header(name: $0.0, value: $0.1) })
        else { return false }
        writer.append(Array(body.utf8))
        return writer.commit()
    }

    func served(_ request: CacheRequest) -> StoredResponse? {
        if case .fresh(let stored) = lookup(request) { return stored }
        return nil
    }
}

extension CacheFixture {
    /// `http://a.test/x` fetched in English ("hello") and in French ("bonjour"), `Vary: Accept-Language`,
    /// with `max-age` and, for French, `frenchHeaders`; the two requests.
    @discardableResult
    func fetchEnglishAndFrench(maxAge: Int = 60, frenchHeaders: [(String, String)] = []) -> (
        english: CacheRequest, french: CacheRequest
    ) {
        let varying = [("Cache-Control", "max-age=\(maxAge)"), ("Vary", "Accept-Language")]
        let english = request(headers: [("Accept-Language", "en")])
        let french = request(headers: [("Accept-Language", "fr")])
        #expect(fetch(english, headers: varying, body: "hello"))
        #expect(fetch(french, headers: varying + frenchHeaders, body: "bonjour"))
        return (english, french)
    }
}

extension StoredResponse {
    var text: String { String(decoding: body.readAll(), as: UTF8.self) }
    func header(_ name: String) -> String? { servedHeaders.last { $0.name == name }?.value }
}

@Suite struct HTTPCacheTests {
    @Test("a response with max-age is served from the cache until it is stale, with its Age")
    func maxAge() throws {
        let fixture = try CacheFixture()
        let request = fixture.request()
        #expect(fixture.fetch(request, headers: [("Cache-Control", "max-age=60"), ("Content-Type", "text/plain")]))
        fixture.clock.advance(30)
        let stored = try #require(fixture.served(request))
        #expect(stored.text == "hello")
        #expect(stored.head.status == 200)
        #expect(stored.header("Age") == "30")
        #expect(stored.header("Content-Length") == "5")
        #expect(stored.header("Content-Type") == "text/plain")
        fixture.clock.advance(31)
        guard case .send(let fill) = fixture.lookup(request) else { Issue.record("stale: expected a send"); return }
        #expect(fill.stored != nil)
        #expect(fill.conditionalHeaders.isEmpty)  // no validators: a full request
    }

    @Test("a stale response with validators is revalidated; a 304 refreshes its headers and keeps its body")
    func revalidation() throws {
        let fixture = try CacheFixture()
        let request = fixture.request()
        fixture.fetch(
            request,
            headers: [
                ("Cache-Control", "max-age=10"), ("ETag", "\"v1\""), ("Last-Modified", "Sun, 06 Nov 1994 08:49:37 GMT"),
                ("X-Version", "1"),
            ])
        fixture.clock.advance(20)
        guard case .send(let fill) = fixture.lookup(request) else { Issue.record("expected a send"); return }
        #expect(
            fill.conditionalHeaders == [
                RequestSnapshot.Header(name: "If-None-Match", value: "\"v1\""),
                RequestSnapshot.Header(name: "If-Modified-Since", value: "Sun, 06 Nov 1994 08:49:37 GMT"),
            ])
        let refreshed = try #require(
            fill.revalidated(by: [
                RequestSnapshot.Header(name: "Cache-Control", value: "max-age=100"),
                RequestSnapshot.Header(name: "X-Version", value: "2"),
            ]))
        #expect(refreshed.text == "hello")
        #expect(refreshed.head.value("x-version") == "2")
        fixture.clock.advance(50)
        let again = try #require(fixture.served(request))
        #expect(again.head.value("x-version") == "2")
        #expect(again.header("Age") == "50")
    }

    @Test("the Age a response comes with counts toward its age: older than its max-age, it is stale on arrival")
    func receivedAge() throws {
        let fixture = try CacheFixture()
        let young = fixture.request("http://a.test/young")
        #expect(fixture.fetch(young, headers: [("Cache-Control", "max-age=60"), ("Age", "40")]))
        fixture.clock.advance(5)
        #expect(fixture.served(young)?.header("Age") == "45")
        #expect(fixture.served(young)?.servedHeaders.filter { $0.name.lowercased() == "age" }.count == 1)
        fixture.clock.advance(20)
        #expect(fixture.served(young) == nil)
        let old = fixture.request("http://a.test/old")
        #expect(fixture.fetch(old, headers: [("Cache-Control", "max-age=60"), ("Age", "100")]))
        #expect(fixture.served(old) == nil)
        let unreadable = fixture.request("http://a.test/unreadable")
        #expect(fixture.fetch(unreadable, headers: [("Cache-Control", "max-age=60"), ("Age", "-5")]))
        #expect(fixture.served(unreadable)?.header("Age") == "0")
    }

    @Test("a 304's Age is the refreshed response's age; a 304 without one makes it new")
    func revalidatedAge() throws {
        let fixture = try CacheFixture()
        let request = fixture.request()
        fixture.fetch(request, headers: [("Cache-Control", "max-age=10"), ("ETag", "\"v1\""), ("Age", "5")])
        fixture.clock.advance(20)
        guard case .send(let fill) = fixture.lookup(request) else { Issue.record("expected a send"); return }
        let refreshed = try #require(
            fill.revalidated(by: [
                RequestSnapshot.Header(name: "Cache-Control", value: "max-age=100"),
                RequestSnapshot.Header(name: "Age", value: "30"),
            ]))
        #expect(refreshed.age == 30)
        fixture.clock.advance(20)
        guard case .send(let second) = fixture.lookup(fixture.request(headers: [("Cache-Control", "no-cache")])) else {
            Issue.record("expected a send")
            return
        }
        let renewed = try #require(second.revalidated(by: []))
        #expect(renewed.age == 0)
    }

    @Test("no-store in the response or the request keeps nothing")
    func noStore() throws {
        let fixture = try CacheFixture()
        #expect(!fixture.fetch(fixture.request(), headers: [("Cache-Control", "no-store, max-age=60")]))
        guard case .bypass = fixture.lookup(fixture.request(headers: [("Cache-Control", "no-store")])) else {
            Issue.record("a no-store request is not the cache's"); return
        }
        guard case .send = fixture.lookup(fixture.request()) else { Issue.record("nothing was stored"); return }
    }

    @Test("a shared cache keeps no private response; a private cache does")
    func privateResponses() throws {
        let shared = try CacheFixture(isShared: true)
        #expect(!shared.fetch(shared.request(), headers: [("Cache-Control", "private, max-age=60")]))
        let own = try CacheFixture(isShared: false)
        #expect(own.fetch(own.request(), headers: [("Cache-Control", "private, max-age=60")]))
        #expect(own.served(own.request()) != nil)
    }

    @Test("s-maxage governs a shared cache and is ignored by a private one")
    func sharedMaxAge() throws {
        let headers = [("Cache-Control", "max-age=10, s-maxage=100")]
        let shared = try CacheFixture(isShared: true)
        shared.fetch(shared.request(), headers: headers)
        shared.clock.advance(50)
        #expect(shared.served(shared.request()) != nil)
        let own = try CacheFixture(isShared: false)
        own.fetch(own.request(), headers: headers)
        own.clock.advance(50)
        #expect(own.served(own.request()) == nil)
    }

    @Test(
        "a request with Authorization or Cookie is stored only under a private rule",
        arguments: [
            "Authorization", "Cookie",
        ])
    func credentials(header: String) throws {
        let fixture = try CacheFixture()
        let plain = fixture.request(headers: [(header, "secret")])
        #expect(!fixture.fetch(plain, headers: [("Cache-Control", "max-age=60")]))
        let allowed = fixture.request(
            headers: [(header, "secret")], settings: CacheSettings(storesPrivateRequests: true))
        #expect(fixture.fetch(allowed, headers: [("Cache-Control", "max-age=60")]))
    }

    @Test("a response that sets a cookie is stored only under a private rule")
    func setCookie() throws {
        let fixture = try CacheFixture()
        #expect(!fixture.fetch(fixture.request(), headers: [("Cache-Control", "max-age=60"), ("Set-Cookie", "a=b")]))
    }

    @Test("Vary: a stored response answers only requests with the same values of the headers it names")
    func vary() throws {
        let fixture = try CacheFixture()
        let english = fixture.request(headers: [("Accept-Language", "en")])
        fixture.fetch(english, headers: [("Cache-Control", "max-age=60"), ("Vary", "Accept-Language")])
        #expect(fixture.served(english) != nil)
        #expect(fixture.served(fixture.request(headers: [("Accept-Language", "fr")])) == nil)
        #expect(fixture.served(fixture.request()) == nil)
        #expect(!fixture.fetch(fixture.request(), headers: [("Cache-Control", "max-age=60"), ("Vary", "*")]))
    }

    @Test("each variant of a response that varies is kept: requests alternating between values are all hits")
    func variants() throws {
        let fixture = try CacheFixture()
        let (english, french) = fixture.fetchEnglishAndFrench()
        let none = fixture.request()
        #expect(
            fixture.fetch(none, headers: [("Cache-Control", "max-age=60"), ("Vary", "Accept-Language")], body: "hi"))
        for _ in 0..<2 {
            #expect(fixture.served(english)?.text == "hello")
            #expect(fixture.served(french)?.text == "bonjour")
            #expect(fixture.served(none)?.text == "hi")
        }
        #expect(fixture.served(fixture.request(headers: [("Accept-Language", "de")])) == nil)
        #expect(fixture.cache.entries().map(\.url) == Array(repeating: "http://a.test/x", count: 3))
    }

    @Test("a stale variant is revalidated or replaced in its own entry; the other variants stay as they were")
    func variantRefreshed() throws {
        let fixture = try CacheFixture()
        let (english, french) = fixture.fetchEnglishAndFrench(maxAge: 10, frenchHeaders: [("ETag", "\"fr\"")])
        fixture.clock.advance(20)
        guard case .send(let revalidation) = fixture.lookup(french) else { Issue.record("expected a send"); return }
        #expect(revalidation.conditionalHeaders == [RequestSnapshot.Header(name: "If-None-Match", value: "\"fr\"")])
        _ = revalidation.revalidated(by: [RequestSnapshot.Header(name: "Cache-Control", value: "max-age=100")])
        #expect(fixture.served(french)?.text == "bonjour")
        guard case .send(let replacement) = fixture.lookup(english) else { Issue.record("expected a send"); return }
        #expect(replacement.stored?.text == "hello")
        let writer = try #require(
            replacement.store(
                status: 200,
                headers: [
                    RequestSnapshot.Header(name: "Cache-Control", value: "max-age=100"),
                    RequestSnapshot.Header(name: "Vary", value: "Accept-Language"),
                ]))
        writer.append(Array("hello again".utf8))
        #expect(writer.commit())
        #expect(fixture.served(english)?.text == "hello again")
        #expect(fixture.served(french)?.text == "bonjour")
        #expect(fixture.cache.usage.entries == 2)
    }

    @Test("a URL's variants go with it: a change the server answered, or a response that no longer varies, drops them")
    func variantsDropped() throws {
        let fixture = try CacheFixture()
        fixture.fetchEnglishAndFrench()
        fixture.cache.invalidate(url: "http://a.test/x")
        #expect(fixture.cache.usage.entries == 0)
        let (_, french) = fixture.fetchEnglishAndFrench()
        fixture.fetch(
            fixture.request(headers: [("Accept-Language", "de")]), headers: [("Cache-Control", "max-age=60")],
            body: "for everyone")
        #expect(fixture.cache.usage.entries == 1)
        #expect(fixture.served(french)?.text == "for everyone")
    }

    @Test("Expires gives freshness relative to Date; an invalid Expires is already stale")
    func expires() throws {
        let fixture = try CacheFixture()
        let now = fixture.clock.date
        let date = HTTPDateText.format(now)
        fixture.fetch(
            fixture.request(), headers: [("Date", date), ("Expires", HTTPDateText.format(now.addingTimeInterval(120)))])
        fixture.clock.advance(100)
        #expect(fixture.served(fixture.request()) != nil)
        fixture.clock.advance(30)
        #expect(fixture.served(fixture.request()) == nil)
        let other = fixture.request("http://a.test/other")
        fixture.fetch(other, headers: [("Date", date), ("Expires", "0"), ("ETag", "\"e\"")])
        #expect(fixture.served(other) == nil)
    }

    @Test("heuristic freshness: a tenth of the time since Last-Modified, for statuses the RFC allows")
    func heuristic() throws {
        let fixture = try CacheFixture()
        let now = fixture.clock.date
        let headers = [("Date", HTTPDateText.format(now)), ("Last-Modified", HTTPDateText.format(now - 1_000))]
        fixture.fetch(fixture.request(), headers: headers)
        fixture.clock.advance(90)
        #expect(fixture.served(fixture.request()) != nil)
        fixture.clock.advance(20)
        #expect(fixture.served(fixture.request()) == nil)
        // 302 is not heuristically cacheable: without explicit freshness it is not stored.
        #expect(!fixture.fetch(fixture.request("http://a.test/moved"), status: 302, headers: headers))
    }

    @Test("ttl= overrides the response's freshness, but never no-store")
    func timeToLive() throws {
        let fixture = try CacheFixture()
        let settings = CacheSettings(timeToLive: .seconds(600))
        let request = fixture.request(settings: settings)
        #expect(fixture.fetch(request, headers: [("Cache-Control", "max-age=0")]))
        fixture.clock.advance(500)
        #expect(fixture.served(request) != nil)
        #expect(
            !fixture.fetch(
                fixture.request("http://a.test/n", settings: settings), headers: [("Cache-Control", "no-store")]))
    }

    @Test("a request's no-cache or max-age=0 revalidates a fresh response")
    func requestDirectives() throws {
        let fixture = try CacheFixture()
        fixture.fetch(fixture.request(), headers: [("Cache-Control", "max-age=600"), ("ETag", "\"x\"")])
        for headers in [[("Cache-Control", "no-cache")], [("Pragma", "no-cache")], [("Cache-Control", "max-age=0")]] {
            fixture.clock.advance(1)
            guard case .send(let fill) = fixture.lookup(fixture.request(headers: headers)) else {
                Issue.record("\(headers): expected a send")
                continue
            }
            #expect(fill.conditionalHeaders == [RequestSnapshot.Header(name: "If-None-Match", value: "\"x\"")])
            fill.finishWithoutStoring()
        }
    }

    @Test("a request's min-fresh takes only a response that stays fresh that much longer")
    func minFresh() throws {
        let fixture = try CacheFixture()
        fixture.fetch(fixture.request(), headers: [("Cache-Control", "max-age=60")])
        fixture.clock.advance(30)
        #expect(fixture.served(fixture.request(headers: [("Cache-Control", "min-fresh=20")])) != nil)
        guard case .send(let fill) = fixture.lookup(fixture.request(headers: [("Cache-Control", "min-fresh=40")]))
        else { Issue.record("expected a send"); return }
        fill.finishWithoutStoring()
    }

    @Test("a request's max-stale takes a stale response within its margin, or however stale without one")
    func maxStale() throws {
        let fixture = try CacheFixture()
        fixture.fetch(fixture.request(), headers: [("Cache-Control", "max-age=60")])
        fixture.clock.advance(90)
        for directive in ["max-stale=60", "max-stale"] {
            guard case .stale(let stored) = fixture.lookup(fixture.request(headers: [("Cache-Control", directive)]))
            else { Issue.record("\(directive): expected a stale answer"); continue }
            #expect(stored.header("Age") == "90")
        }
        for directive in ["max-stale=10", "max-stale=600, max-age=60", "max-stale, no-cache"] {
            guard case .send(let fill) = fixture.lookup(fixture.request(headers: [("Cache-Control", directive)]))
            else { Issue.record("\(directive): expected a send"); continue }
            fill.finishWithoutStoring()
        }
    }

    @Test("max-stale cannot take a stale response that must be revalidated")
    func maxStaleMustRevalidate() throws {
        let fixture = try CacheFixture()
        fixture.fetch(fixture.request(), headers: [("Cache-Control", "max-age=60, must-revalidate")])
        fixture.clock.advance(90)
        guard case .send(let fill) = fixture.lookup(fixture.request(headers: [("Cache-Control", "max-stale")])) else {
            Issue.record("expected a send")
            return
        }
        fill.finishWithoutStoring()
    }

    @Test("only-if-cached is answered from the cache or not at all: nothing stored, or only stale, is unsatisfiable")
    func onlyIfCached() throws {
        let fixture = try CacheFixture()
        let onlyCached = [("Cache-Control", "only-if-cached")]
        guard case .unsatisfiable = fixture.lookup(fixture.request(headers: onlyCached)) else {
            Issue.record("nothing stored: expected unsatisfiable")
            return
        }
        fixture.fetch(
            fixture.request(), headers: [("Cache-Control", "max-age=60, stale-while-revalidate=600")], body: "kept")
        #expect(fixture.served(fixture.request(headers: onlyCached))?.text == "kept")
        fixture.clock.advance(90)
        guard case .unsatisfiable = fixture.lookup(fixture.request(headers: onlyCached)) else {
            Issue.record("stale: expected unsatisfiable")
            return
        }
        let staleTaken = [("Cache-Control", "only-if-cached, max-stale")]
        guard case .stale(let stored) = fixture.lookup(fixture.request(headers: staleTaken)) else {
            Issue.record("stale with max-stale: expected a stale answer")
            return
        }
        #expect(stored.text == "kept")
    }

    @Test(
        "a response marked no-cache (or Pragma: no-cache without Cache-Control) is stored but revalidated every time",
        arguments: [
            [("Cache-Control", "no-cache, max-age=600")],
            [("Pragma", "no-cache"), ("Expires", "Thu, 01 Jan 2037 00:00:00 GMT")],
        ])
    func responseNoCache(marking: [(String, String)]) throws {
        let fixture = try CacheFixture()
        #expect(fixture.fetch(fixture.request(), headers: marking + [("ETag", "\"n\"")]))
        guard case .send(let fill) = fixture.lookup(fixture.request()) else { Issue.record("expected a send"); return }
        #expect(fill.conditionalHeaders.map(\.name) == ["If-None-Match"])
    }

    @Test("a response's Pragma: no-cache is ignored beside its Cache-Control")
    func responsePragmaBesideCacheControl() throws {
        let fixture = try CacheFixture()
        fixture.fetch(fixture.request(), headers: [("Pragma", "no-cache"), ("Cache-Control", "max-age=600")])
        guard case .fresh = fixture.lookup(fixture.request()) else { Issue.record("expected a fresh answer"); return }
    }

    @Test("HEAD is answered from a stored GET and never stored itself")
    func head() throws {
        let fixture = try CacheFixture()
        guard case .bypass = fixture.lookup(fixture.request(method: "HEAD")) else { Issue.record("bypass"); return }
        fixture.fetch(fixture.request(), headers: [("Cache-Control", "max-age=60")])
        #expect(fixture.served(fixture.request(method: "HEAD")) != nil)
        guard case .bypass = fixture.lookup(fixture.request(method: "POST")) else { Issue.record("bypass"); return }
    }

    @Test("when the server cannot be reached, a stale response is served within stale-if-error or under offline")
    func fallback() throws {
        let fixture = try CacheFixture()
        fixture.fetch(
            fixture.request("http://a.test/sie"), headers: [("Cache-Control", "max-age=10, stale-if-error=60")])
        fixture.fetch(fixture.request("http://a.test/mr"), headers: [("Cache-Control", "max-age=10, must-revalidate")])
        fixture.clock.advance(40)
        func fallback(_ url: String, settings: CacheSettings = CacheSettings()) -> StoredResponse? {
            guard case .send(let fill) = fixture.lookup(fixture.request(url, settings: settings)) else { return nil }
            defer { fill.finishWithoutStoring() }
            return fill.fallback
        }
        #expect(fallback("http://a.test/sie")?.header("Age") == "40")
        #expect(fallback("http://a.test/mr") == nil)
        #expect(fallback("http://a.test/mr", settings: CacheSettings(servesOffline: true)) != nil)
        fixture.clock.advance(40)
        #expect(fallback("http://a.test/sie") == nil)
    }

    @Test("concurrent misses of one URL make one request; the others get what it stored")
    func singleFlight() async throws {
        let fixture = try CacheFixture()
        let request = fixture.request()
        let sends = Mutex<[CacheFill]>([])
        let served = Mutex<[String]>([])
        for _ in 0..<20 {
            fixture.cache.lookup(request) { lookup in
                switch lookup {
                case .send(let fill): sends.withLock { $0.append(fill) }
                case .fresh(let stored): served.withLock { $0.append(stored.text) }
                case .bypass: served.withLock { $0.append("bypass") }
                case .staleWhileRevalidating, .stale: served.withLock { $0.append("stale") }
                case .unsatisfiable: served.withLock { $0.append("unsatisfiable") }
                }
            }
        }
        #expect(sends.withLock { $0.count } == 1)
        #expect(served.withLock { $0.isEmpty })
        let fill = try #require(sends.withLock { $0.first })
        let writer = try #require(
            fill.store(status: 200, headers: [RequestSnapshot.Header(name: "Cache-Control", value: "max-age=60")]))
        writer.append(Array("one".utf8))
        #expect(writer.commit())
        #expect(served.withLock { $0 } == Array(repeating: "one", count: 19))
    }

    @Test("requests that waited for a response that was not stored go on without the cache, at once")
    func waitersBypassAfterRefusal() throws {
        let fixture = try CacheFixture()
        let request = fixture.request()
        let results = Mutex<[String]>([])
        var first: CacheFill?
        guard case .send(let fill) = fixture.lookup(request) else { Issue.record("expected a send"); return }
        first = fill
        for _ in 0..<3 {
            fixture.cache.lookup(request) { lookup in
                if case .bypass = lookup { results.withLock { $0.append("bypass") } }
            }
        }
        #expect(
            first?.store(status: 200, headers: [RequestSnapshot.Header(name: "Cache-Control", value: "no-store")])
                == nil)
        #expect(results.withLock { $0 } == ["bypass", "bypass", "bypass"])
        first = nil
    }

    @Test("a fill dropped without an end releases the requests that wait for it")
    func droppedFill() throws {
        let fixture = try CacheFixture()
        let released = Mutex(false)
        do {
            guard case .send = fixture.lookup(fixture.request()) else { Issue.record("expected a send"); return }
        }
        fixture.cache.lookup(fixture.request()) { lookup in
            if case .send = lookup { released.withLock { $0 = true } }
        }
        #expect(released.withLock { $0 })
    }
}

/// HTTP dates for test inputs.
enum HTTPDateText {
    static func format(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}

extension HTTPCacheTests {
    /// Fetches `request` with `control` and an ETag, then lets `seconds` pass.
    static func stored(_ fixture: CacheFixture, _ request: CacheRequest, control: String, after seconds: Double) {
        fixture.fetch(request, headers: [("Cache-Control", control), ("ETag", "\"v1\"")])
        fixture.clock.advance(seconds)
    }

    @Test("within stale-while-revalidate a stale response is served at once, and one lookup at a time revalidates it")
    func staleWhileRevalidate() throws {
        let fixture = try CacheFixture()
        let request = fixture.request()
        Self.stored(fixture, request, control: "max-age=10, stale-while-revalidate=30", after: 20)
        guard case .staleWhileRevalidating(let stored, let fill?) = fixture.lookup(request) else {
            Issue.record("expected a stale response and a fill")
            return
        }
        #expect(stored.text == "hello")
        #expect(stored.header("Age") == "20")
        #expect(fill.conditionalHeaders == [RequestSnapshot.Header(name: "If-None-Match", value: "\"v1\"")])
        guard case .staleWhileRevalidating(_, nil) = fixture.lookup(request) else {
            Issue.record("a second lookup while the first revalidates: expected the stale response alone")
            return
        }
        #expect(
            fill.answeredInBackground(
                status: 304, headers: [RequestSnapshot.Header(name: "Cache-Control", value: "max-age=100")]) == nil)
        #expect(fixture.served(request)?.text == "hello")
    }

    @Test("a background answer other than 304 replaces the stored response; an error answer leaves it")
    func backgroundAnswers() throws {
        let fixture = try CacheFixture()
        let request = fixture.request()
        Self.stored(fixture, request, control: "max-age=10, stale-while-revalidate=30", after: 20)
        guard case .staleWhileRevalidating(_, let failing?) = fixture.lookup(request) else {
            Issue.record("expected a fill")
            return
        }
        #expect(failing.answeredInBackground(status: 503, headers: []) == nil)
        guard case .staleWhileRevalidating(let kept, let fill?) = fixture.lookup(request) else {
            Issue.record("after the error: expected the stale response again, and a new fill")
            return
        }
        #expect(kept.text == "hello")
        let writer = try #require(
            fill.answeredInBackground(
                status: 200, headers: [RequestSnapshot.Header(name: "Cache-Control", value: "max-age=60")]))
        writer.append(Array("new".utf8))
        #expect(writer.commit())
        #expect(fixture.served(request)?.text == "new")
    }

    @Test(
        "past stale-while-revalidate, under must-revalidate, or when the request asks for validation, the request goes to the server",
        arguments: [
            ("max-age=10, stale-while-revalidate=5", [(String, String)]()),
            ("max-age=10, stale-while-revalidate=30, must-revalidate", []),
            ("max-age=10, stale-while-revalidate=30", [("Cache-Control", "no-cache")]),
            ("max-age=10, stale-while-revalidate=30", [("Cache-Control", "max-age=0")]),
        ])
    func notServedWhileRevalidating(control: String, requestHeaders: [(String, String)]) throws {
        let fixture = try CacheFixture()
        Self.stored(fixture, fixture.request(), control: control, after: 20)
        guard case .send(let fill) = fixture.lookup(fixture.request(headers: requestHeaders)) else {
            Issue.record("expected a send")
            return
        }
        #expect(fill.stored != nil)
    }

    @Test("within stale-if-error a 500, 502, 503 or 504 is answered with the stored response; other statuses are not")
    func staleIfErrorStatuses() throws {
        let fixture = try CacheFixture()
        let request = fixture.request()
        Self.stored(fixture, request, control: "max-age=10, stale-if-error=30", after: 20)
        guard case .send(let fill) = fixture.lookup(request) else {
            Issue.record("expected a send")
            return
        }
        for status in [500, 502, 503, 504] { #expect(fill.fallback(replacing: status)?.text == "hello") }
        for status in [200, 404, 501, 505] { #expect(fill.fallback(replacing: status) == nil) }
    }

    @Test("past stale-if-error, or under must-revalidate, a server's error is passed on")
    func staleIfErrorLimits() throws {
        for (control, seconds) in [
            ("max-age=10, stale-if-error=30", 50.0), ("max-age=10, stale-if-error=30, must-revalidate", 20),
        ] {
            let fixture = try CacheFixture()
            let request = fixture.request()
            Self.stored(fixture, request, control: control, after: seconds)
            guard case .send(let fill) = fixture.lookup(request) else {
                Issue.record("expected a send")
                return
            }
            #expect(fill.fallback(replacing: 503) == nil, "\(control) after \(seconds) s")
        }
    }
}
