import AuditLocking
import AuditRegex

/// A loaded, compiled policy: every rule of a set of rule files, ready to evaluate requests.
///
/// A policy is immutable and `Sendable`; evaluate from as many tasks as you like. Loading either
/// succeeds with every rule or fails with every error; there is never a half-loaded policy.
///
/// ```swift
/// let policy = try Policy(directory: "policies")
/// let verdict = policy.evaluate(AuditRequest(method: "GET", url: "https://www.rivalshop.com/cart"))
/// if verdict.isBlocking { print("blocked by \(verdict.rule?.id ?? "?")") }
/// ```
public struct Policy: Sendable {
    /// Every rule, in policy order: files in path order, then line order.
    public let rules: [Rule]
    /// Problems that do not prevent loading (for example an empty section).
    public let warnings: [Diagnostic]
    /// The rule files read, in policy order.
    public let files: [String]
    /// The rules filed by the tokens a request must carry for them to match.
    let index: RuleIndex
    /// ``decidesBeyondOrigin(_:host:)``'s answers so far, shared by the policy's copies.
    let originDepths = OriginDepths()

    /// Loads every `.rules` file under `directory` (searched recursively, sorted by path).
    ///
    /// - Throws: ``PolicyError/invalidPolicy(_:)`` with every error found,
    ///   ``PolicyError/noRuleFiles(directory:)`` or ``PolicyError/cannotRead(path:reason:)``.
    public init(directory: String, limits: MatchLimits = .default) throws(PolicyError) {
        let sources = try PolicySource.files(in: directory, withExtension: "rules")
        guard !sources.isEmpty else { throw .noRuleFiles(directory: directory) }
        try self.init(sources: sources, limits: limits)
    }

    /// Compiles rule text held in memory, as if read from `file`.
    public init(parsing text: String, file: String = "inline.rules", limits: MatchLimits = .default)
        throws(PolicyError)
    {
        try self.init(sources: [PolicySource(file: file, text: text)], limits: limits)
    }

    /// Compiles the given rule files, in the order given.
    public init(sources: [PolicySource], limits: MatchLimits = .default) throws(PolicyError) {
        let output = PolicyCompiler.compile(sources, limits: limits)
        let errors = output.diagnostics.filter(\.isError)
        guard errors.isEmpty else { throw .invalidPolicy(errors) }
        self.init(rules: output.rules, warnings: output.diagnostics, files: sources.map(\.file))
    }

    init(rules: [Rule], warnings: [Diagnostic], files: [String]) {
        self.rules = rules
        self.warnings = warnings
        self.files = files
        self.index = RuleIndex(rules: rules)
    }

    /// A lock around answers by origin, in a class so that copies of the policy share it.
    final class OriginDepths: Sendable {
        private let depths = Locked<[String: Bool]>([:])
        func withLock<Result>(_ body: (inout [String: Bool]) -> Result) -> Result {
            depths.withLock { value in body(&value) }
        }
    }

    /// The rule with full id `id` (`category/name`), if any.
    public func rule(id: String) -> Rule? {
        rules.first { $0.id == id }
    }
}
