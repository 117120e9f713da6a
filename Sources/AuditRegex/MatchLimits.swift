/// Bounds on the work one match may do, so that a hostile pattern or input cannot hang a request.
///
/// When a limit is hit the match throws ``PatternError/matchLimitExceeded`` or
/// ``PatternError/depthLimitExceeded`` instead of answering.
public struct MatchLimits: Sendable, Hashable {
    /// Maximum number of internal match-function calls (PCRE2's `match_limit`).
    public var matchLimit: UInt32
    /// Maximum backtracking depth for the interpreter (PCRE2's `depth_limit`).
    public var depthLimit: UInt32

    /// Creates limits.
    public init(matchLimit: UInt32, depthLimit: UInt32) {
        self.matchLimit = matchLimit
        self.depthLimit = depthLimit
    }

    /// One million steps and a depth of 100,000: far above what a sane URL pattern needs,
    /// a few milliseconds at worst.
    public static let `default` = MatchLimits(matchLimit: 1_000_000, depthLimit: 100_000)
}
