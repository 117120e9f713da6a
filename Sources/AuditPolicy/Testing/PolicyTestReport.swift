/// The outcome of running every case of a set of `.test` files.
public struct PolicyTestReport: Sendable {
    /// Every case that ran, in file and line order.
    public let results: [PolicyTestResult]
    /// Lines that could not be read as cases (each counts as a failure), sorted by location.
    public let diagnostics: [Diagnostic]
    /// Rules that no case exercised: none decided a case's verdict or was recorded by one.
    public let unexercisedRules: [Rule]

    /// Cases whose expectation held.
    public var passedCount: Int { results.count { $0.isPassing } }
    /// Cases that failed, plus unreadable lines.
    public var failedCount: Int { results.count { !$0.isPassing } + diagnostics.count { $0.isError } }
    /// Whether every case passed and every line was readable.
    public var hasFailures: Bool { failedCount > 0 }
    /// The closing line: `N passed, M failed`.
    public var summary: String { "\(passedCount) passed, \(failedCount) failed" }
}
