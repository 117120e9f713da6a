/// A compiled PCRE2 regular expression, safe to share between threads.
///
/// The pattern is compiled in UTF mode with PCRE2's invalid-UTF support, and JIT-compiled on its
/// first match when the platform supports it (so a large policy loads fast and pays for machine
/// code only for the rules it uses). Matching never changes what the pattern matches, and each
/// match uses its own match data, so one `Pattern` may be used from many tasks at once.
///
/// ```swift
/// let pattern = try Pattern(#"^https://search\.rival\.com/search\?q=([^&]*)"#)
/// let match = try pattern.firstMatch(in: "https://search.rival.com/search?q=shoes")
/// print(match?[1] ?? "")   // shoes
/// ```
public struct Pattern: Sendable {
    /// The pattern text as written.
    public let source: String
    /// Whether letters match regardless of case.
    public let isCaseInsensitive: Bool
    /// The limits every match runs under.
    public let limits: MatchLimits
    let code: PCRE2Code
    /// The string the pattern stands for, when it is one (matched without PCRE2).
    let literal: LiteralPattern?

    /// Compiles `source`.
    ///
    /// - Throws: ``PatternError/invalidPattern(message:column:)`` with PCRE2's message and the
    ///   1-based column of the error in `source`.
    public init(_ source: String, caseInsensitive: Bool = false, limits: MatchLimits = .default) throws(PatternError) {
        self.source = source
        self.isCaseInsensitive = caseInsensitive
        self.limits = limits
        self.code = try PCRE2Code(pattern: source, caseInsensitive: caseInsensitive, limits: limits)
        self.literal = LiteralPattern(source, caseInsensitive: caseInsensitive, limits: limits)
    }

    /// Number of capturing groups in the pattern.
    public var captureGroupCount: Int { code.captureGroupCount }

    /// Whether matching runs JIT-compiled machine code (false when the JIT is unavailable).
    ///
    /// Asking JIT-compiles the pattern if no match has done so yet.
    public var isJITCompiled: Bool { code.isJITCompiled }

    /// Whether the pattern matches anywhere in `subject`.
    ///
    /// A pattern that is one ASCII string is searched for without PCRE2, with PCRE2's answer (see
    /// `LiteralPattern`).
    ///
    /// - Throws: a limit error when the match gives up before answering.
    public func matches(_ subject: MatchSubject) throws(PatternError) -> Bool {
        // The pattern's parts are asked to read the subject themselves: a closure here would
        // capture (and copy) the whole pattern, three reference counts a match.
        if let answer = literal?.matches(subject) { return answer }
        return try code.matches(subject)
    }

    /// Whether matching searches for one literal string rather than running PCRE2 (a pattern such
    /// as `ttp` or `\/track\.ashx\?`).
    public var isLiteral: Bool { literal != nil }

    /// Whether the pattern matches anywhere in `text`.
    public func matches(_ text: String) throws(PatternError) -> Bool {
        try matches(MatchSubject(text))
    }

    /// The first match in `subject` with its capturing groups, or nil.
    ///
    /// - Throws: a limit error when the match gives up before answering.
    public func firstMatch(in subject: MatchSubject) throws(PatternError) -> PatternMatch? {
        let ranges = unsafe try subject.withBytes { bytes throws(PatternError) in
            unsafe try code.firstMatch(in: bytes)
        }
        return ranges.map { PatternMatch(ranges: $0, subject: subject) }
    }

    /// The first match in `text` with its capturing groups, or nil.
    public func firstMatch(in text: String) throws(PatternError) -> PatternMatch? {
        try firstMatch(in: MatchSubject(text))
    }

    /// How a pattern matches the subjects that begin with a given prefix.
    public enum PrefixMatch: Sendable, Equatable {
        /// It matches no subject that begins with the prefix.
        case none
        /// It matches some, depending on what follows the prefix.
        case some
        /// It matches every subject that begins with the prefix (its match is decided within it).
        case every
    }

    /// How the pattern matches subjects that begin with `prefix`, such as every URL of one origin
    /// (`https://example.org/`). Sound in both directions: `.none` and `.every` are only answered
    /// when what follows the prefix cannot change the result.
    ///
    /// - Throws: a limit error when the match gives up before answering.
    public func prefixMatch(_ prefix: String) throws(PatternError) -> PrefixMatch {
        unsafe try MatchSubject(prefix).withBytes { bytes throws(PatternError) in
            unsafe try code.prefixMatch(bytes)
        }
    }

    /// The version of the linked PCRE2 library, e.g. "10.42 2022-12-11".
    public static var libraryVersion: String { PCRE2Code.libraryVersion }
}
