import AuditPolicy
import AuditReport
import Foundation

/// RFC 9111's rules for one stored response: whether it may be stored, how long it stays fresh,
/// how old it is, and whether it may be served stale.
///
/// A shared cache (`audit proxy`, serving many clients) honours `s-maxage` and refuses `private`
/// responses; a private one (in an app) keeps `private` responses and ignores `s-maxage`.
struct Freshness {
    let isShared: Bool

    /// Statuses a cache may give heuristic freshness to (RFC 9110 §15.1).
    static let heuristicallyCacheable: Set<Int> = [200, 203, 204, 300, 301, 308, 404, 405, 410, 414, 501]

    /// Headers that are never stored (hop-by-hop, and framing the cache redoes).
    static let unstoredHeaders: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "te", "trailer", "transfer-encoding", "upgrade",
        "proxy-authenticate", "proxy-authorization", "content-length", "age",
    ]

    /// Why a response is not stored, or nil when it may be.
    func refusal(of request: CacheRequest, status: Int, headers: [RequestSnapshot.Header]) -> String? {
        guard request.method == "GET" else { return "only GET responses are stored" }
        let settings = request.settings
        let response = CacheControl(headers.filter { $0.name.lowercased() == "cache-control" }.map(\.value))
        if request.control.has("no-store") || response.has("no-store") { return "no-store" }
        if status < 200 || status == 206 || status == 304 || status >= 600 { return "status \(status)" }
        if isShared, response.has("private") { return "Cache-Control: private" }
        let names = Set(request.headers.map { $0.name.lowercased() })
        if !settings.storesPrivateRequests {
            if names.contains("authorization") { return "the request has Authorization (add private to the rule)" }
            if names.contains("cookie") { return "the request has Cookie (add private to the rule)" }
            if headers.contains(where: { $0.name.lowercased() == "set-cookie" }) {
                return "the response sets a cookie (add private to the rule)"
            }
        }
        let vary = headers.filter { $0.name.lowercased() == "vary" }.flatMap { $0.value.split(separator: ",") }
        if vary.contains(where: { $0.trimmingSpaces == "*" }) { return "Vary: *" }
        let hasExplicitFreshness =
            settings.timeToLive != nil || response.has("max-age") || (isShared && response.has("s-maxage"))
            || headers.contains { $0.name.lowercased() == "expires" } || response.has("public")
            || (!isShared && response.has("private"))
        guard hasExplicitFreshness || Self.heuristicallyCacheable.contains(status) else {
            return "status \(status) without explicit freshness"
        }
        return nil
    }

    /// How long `head` stays fresh (RFC 9111 §4.2.1), in seconds.
    func lifetime(of head: StoredHead, settings: CacheSettings) -> Double {
        if let ttl = settings.timeToLiveSeconds { return Double(ttl) }
        let control = head.cacheControl
        if isShared, let seconds = control.seconds("s-maxage") { return Double(seconds) }
        if let seconds = control.seconds("max-age") { return Double(seconds) }
        let date = head.date ?? head.responseTime
        if let expires = head.value("expires") {
            guard let expiry = HTTPDate.parse(expires) else { return 0 }  // an invalid Expires is the past
            return max(0, expiry.timeIntervalSince(date))
        }
        // Heuristic freshness (§4.2.2): a tenth of the time since the last modification, at most a day.
        guard Self.heuristicallyCacheable.contains(head.status) || control.has("public"),
            let modified = head.value("last-modified").flatMap(HTTPDate.parse)
        else { return 0 }
        return min(86_400, max(0, date.timeIntervalSince(modified) / 10))
    }

    /// How old `head` is at `now` (RFC 9111 §4.2.3), in seconds.
    static func age(of head: StoredHead, now: Date) -> Double {
        let ageValue = Double(head.ageValue)
        let dateValue = head.date ?? head.responseTime
        let apparentAge = max(0, head.responseTime.timeIntervalSince(dateValue))
        let responseDelay = max(0, head.responseTime.timeIntervalSince(head.requestTime))
        let correctedInitialAge = max(apparentAge, ageValue + responseDelay)
        return correctedInitialAge + max(0, now.timeIntervalSince(head.responseTime))
    }

    /// The first `Age` header's value in `headers` (RFC 9111 §5.1), 0 when there is none or it is
    /// not a number of seconds. It is kept apart from the stored headers: the cache serves an `Age`
    /// of its own.
    static func ageValue(in headers: [RequestSnapshot.Header]) -> Int {
        headers.first { $0.name.equalsIgnoringASCIICase("age") }.flatMap {
            CacheControl.deltaSeconds($0.value.trimmingSpaces)
        }
            ?? 0
    }

    /// Whether a stale `head` may be served when the origin cannot be reached: always with the
    /// rule's `offline`; else within `stale-if-error` (of the response or the request), unless the
    /// response says `must-revalidate`, `no-cache` (or `proxy-revalidate` to a shared cache).
    func servesStaleOnError(
        _ head: StoredHead, requestControl: CacheControl, age: Double, lifetime: Double, settings: CacheSettings
    ) -> Bool {
        if settings.servesOffline { return true }
        let control = head.cacheControl
        if forbidsServingStale(control) { return false }
        let window = control.seconds("stale-if-error") ?? requestControl.seconds("stale-if-error") ?? -1
        return age <= lifetime + Double(window)
    }

    /// Whether a response's `control` forbids serving it stale (RFC 9111 §4.2.4): `must-revalidate`,
    /// `no-cache`, or `proxy-revalidate` to a shared cache.
    func forbidsServingStale(_ control: CacheControl) -> Bool {
        control.has("must-revalidate") || control.has("no-cache") || (isShared && control.has("proxy-revalidate"))
    }

    /// The headers a 304 brings in place of the stored ones (RFC 9111 §3.2): all but the framing.
    static func refreshed(_ stored: [RequestSnapshot.Header], with update: [RequestSnapshot.Header]) -> [RequestSnapshot
        .Header]
    {
        let updates = update.filter { !unstoredHeaders.contains($0.name.lowercased()) }
        let replaced = Set(updates.map { $0.name.lowercased() })
        return stored.filter { !replaced.contains($0.name.lowercased()) } + updates
    }
}
