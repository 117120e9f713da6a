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

    /// A duration written as a number and a unit: `90s`, `10m`, `2h`, `7d` (a bare number is
    /// seconds); nil when `text` is not one or is over a hundred years.
    static func duration(parsing text: String) -> Duration? {
        var digits = Substring(text)
        var multiplier = 1
        if let unit = digits.last, !unit.isNumber {
            switch unit {
            case "s": multiplier = 1
            case "m": multiplier = 60
            case "h": multiplier = 3_600
            case "d": multiplier = 86_400
            default: return nil
            }
            digits = digits.dropLast()
        }
        guard !digits.isEmpty, digits.allSatisfy(\.isASCII), let value = Int(digits), value >= 0,
            value <= 36_500 * 86_400 / multiplier
        else { return nil }
        return .seconds(value * multiplier)
    }
}
