import AuditRegex

/// Everything `audit lint` found in a policies folder.
public struct LintReport: Sendable {
    /// Every problem in the rule and test files, sorted by location.
    public let diagnostics: [Diagnostic]
    /// The `.rules` files read, in policy order.
    public let ruleFiles: [String]
    /// The `.test` files read, in path order.
    public let testFiles: [String]
    /// Rules that compiled.
    public let ruleCount: Int

    /// Number of errors.
    public var errorCount: Int { diagnostics.count(where: \.isError) }
    /// Number of warnings.
    public var warningCount: Int { diagnostics.count - errorCount }
    /// Whether any error was found.
    public var hasErrors: Bool { errorCount > 0 }
}

/// Checks a policies folder without loading it for use: every problem in one run.
public enum PolicyLinter {
    /// Lints every `.rules` and `.test` file under `directory`.
    ///
    /// Rule files are checked for syntax, options, regex compile errors (PCRE2's message at the
    /// column of the fault), redirect targets, duplicate ids and UTF-8; test files for syntax and,
    /// when the rules compiled, for ids of rules that do not exist.
    ///
    /// - Throws: ``PolicyError/cannotRead(path:reason:)`` when the folder or a file cannot be read.
    public static func lint(directory: String, limits: MatchLimits = .default) throws(PolicyError) -> LintReport {
        let ruleSources = try PolicySource.files(in: directory, withExtension: "rules")
        let testSources = try PolicySource.files(in: directory, withExtension: "test")
        let output = PolicyCompiler.compile(ruleSources, limits: limits)
        var diagnostics = output.diagnostics
        if ruleSources.isEmpty {
            diagnostics.append(
                Diagnostic(.error, at: SourceLocation(file: directory, line: 1, column: 1), "no .rules files found")
            )
        }
        let policy = Policy(rules: output.rules, warnings: [], files: ruleSources.map(\.file))
        // A test naming a rule that failed to compile is not a second error.
        let rulesCompiled = !output.diagnostics.contains(where: \.isError)
        diagnostics += policy.lintTests(testSources, checkingRuleIDs: rulesCompiled)
        diagnostics += probeWarnings(output.rules)
        return LintReport(
            diagnostics: diagnostics.sorted(), ruleFiles: ruleSources.map(\.file),
            testFiles: testSources.map(\.file), ruleCount: output.rules.count
        )
    }

    /// Long, repetitive URLs of the kind that make backtracking patterns explode.
    static let probes: [(description: String, subject: MatchSubject)] = [
        ("'https://aaaa…!' (4,000 a's)", MatchSubject("https://" + String(repeating: "a", count: 4_000) + "!")),
        ("'https://x.test/a.a.a.…!'", MatchSubject("https://x.test/" + String(repeating: "a.", count: 2_000) + "!")),
        ("'https://x.test/a-a-…!'", MatchSubject("https://x.test/" + String(repeating: "a-", count: 2_000) + "!")),
        ("'https://x.test////…!'", MatchSubject("https://x.test/" + String(repeating: "/", count: 4_000) + "!")),
        (
            "'https://x.test/?a=b&a=b&…!'",
            MatchSubject("https://x.test/?" + String(repeating: "a=b&", count: 1_000) + "!")
        ),
    ]

    /// A warning for each rule whose pattern gives up on a probe: real requests like the probe
    /// would fail closed (or, with `--on-error pass`, skip the rule).
    static func probeWarnings(_ rules: [Rule]) -> [Diagnostic] {
        rules.compactMap { rule in
            for probe in probes {
                do {
                    _ = try rule.pattern.matches(probe.subject)
                } catch {
                    let limit = (error as? PatternError) == .depthLimitExceeded ? "depth limit" : "match limit"
                    return Diagnostic(
                        .warning, at: rule.location,
                        "pattern hits the \(limit) on the probe URL \(probe.description): requests like it "
                            + "fail closed (blocked) unless --on-error pass; rewrite nested quantifiers such as (a+)+")
                }
            }
            return nil
        }
    }
}
