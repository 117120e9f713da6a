/// What a `cache` rule asks of the responses to the requests it matches, as written in its section
/// header.
///
/// ```
/// [cache] ttl=10m offline
/// docs ^https://docs\.example\.test/
///
/// [cache] private
/// api-me ^https://api\.example\.test/v1/me$
/// ```
///
/// A `cache` rule never decides a verdict: a request it matches is still blocked, redirected or
/// answered by the rule that decides it. When the request is sent, a GET or HEAD response is stored
/// and served again as RFC 9111 allows, with these overrides.
public struct CacheSettings: Sendable, Hashable {
    /// How long a stored response stays fresh, overriding what the response says (`ttl=`); nil
    /// keeps the RFC's freshness (`max-age`, `s-maxage`, `Expires`, heuristics where allowed).
    public let timeToLive: Duration?
    /// Whether a stored response, however stale, answers the request when the network fails
    /// (`offline`).
    public let servesOffline: Bool
    /// Whether responses to requests with `Authorization` or `Cookie` may be stored (`private`);
    /// they never are otherwise.
    public let storesPrivateRequests: Bool

    /// Creates settings.
    public init(timeToLive: Duration? = nil, servesOffline: Bool = false, storesPrivateRequests: Bool = false) {
        self.timeToLive = timeToLive
        self.servesOffline = servesOffline
        self.storesPrivateRequests = storesPrivateRequests
    }

    /// The time to live in whole seconds, when one is set.
    public var timeToLiveSeconds: Int? { timeToLive.map { Int($0.components.seconds) } }

    /// A duration written as numbers with units, as Go, Caddy and Prometheus write them: `90s`,
    /// `10m`, `2h`, `7d`, `2w`, `1h30m`, `1.5h` (a bare number is seconds), to the nearest second;
    /// nil when `text` is not one or is over a hundred years.
    static func duration(parsing text: String) -> Duration? {
        let limit = 36_500.0 * 86_400
        let isDigit = { (character: Character) in ("0"..."9").contains(character) }
        if text.allSatisfy(isDigit) {
            guard let seconds = Int(text), Double(seconds) <= limit else { return nil }
            return .seconds(seconds)
        }
        var rest = Substring(text)
        var total = 0.0
        repeat {
            let number = rest.prefix { isDigit($0) || $0 == "." }
            rest = rest.dropFirst(number.count)
            guard let first = number.first, let last = number.last, isDigit(first), isDigit(last),
                let value = Double(number),
                let unit = rest.first, let seconds = unitSeconds[unit]
            else { return nil }
            rest = rest.dropFirst()
            total += value * seconds
        } while !rest.isEmpty
        guard total <= limit else { return nil }
        return .seconds(Int(total.rounded()))
    }

    private static let unitSeconds: [Character: Double] = ["s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 604_800]
}
