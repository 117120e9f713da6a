/// Why a pattern could not be compiled or a match could not finish.
public enum PatternError: Error, Equatable, Sendable, CustomStringConvertible {
    /// PCRE2 rejected the pattern; `column` is the 1-based character position in the pattern.
    case invalidPattern(message: String, column: Int)
    /// The match gave up after `MatchLimits.matchLimit` backtracking steps.
    case matchLimitExceeded
    /// The match gave up at `MatchLimits.depthLimit` nested backtracking points.
    case depthLimitExceeded
    /// The match needed more heap than PCRE2 allows.
    case heapLimitExceeded
    /// PCRE2 could not allocate memory.
    case outOfMemory
    /// Any other PCRE2 match error, with PCRE2's code and message.
    case matchFailed(code: Int, message: String)

    /// A one-line explanation for people.
    public var description: String {
        switch self {
        case .invalidPattern(let message, let column): "invalid pattern at column \(column): \(message)"
        case .matchLimitExceeded: "match limit exceeded (pattern backtracks too much on this input)"
        case .depthLimitExceeded: "depth limit exceeded (pattern nests too deeply on this input)"
        case .heapLimitExceeded: "heap limit exceeded"
        case .outOfMemory: "out of memory"
        case .matchFailed(let code, let message): "match failed (PCRE2 error \(code)): \(message)"
        }
    }
}
