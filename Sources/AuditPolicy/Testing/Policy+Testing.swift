extension Policy {
    /// Runs one case.
    ///
    /// ```swift
    /// let result = policy.run(PolicyTestCase(expect: .block, rule: "competitor/rival-shop",
    ///                                        url: "https://www.rivalshop.com/cart"))
    /// #expect(result.isPassing, "\(result)")
    /// ```
    public func run(_ testCase: PolicyTestCase, onError: MatchErrorHandling = .block) -> PolicyTestResult {
        PolicyTestResult(testCase: testCase, verdict: evaluate(testCase.request, onError: onError))
    }

    /// Parses `line` in the `.test` format, runs it, and throws unless it passes: the one-line way to
    /// pin a rule in Swift Testing or XCTest.
    ///
    /// ```swift
    /// @Test func rivalShopIsBlocked() throws {
    ///     try policy.verify("block competitor/rival-shop https://www.rivalshop.com/cart")
    /// }
    /// ```
    /// - Throws: ``PolicyError/invalidTestCase(_:)`` for a malformed line or an unknown rule,
    ///   ``PolicyError/testCaseFailed(_:)`` with expected and actual outcomes when it fails.
    public func verify(
        _ line: String, onError: MatchErrorHandling = .block, file: String = #fileID, lineNumber: Int = #line
    ) throws(PolicyError) {
        let parsed: PolicyTestCase?
        do {
            parsed = try PolicyTestFileParser.parseLine(line, file: file, line: lineNumber)
        } catch {
            throw .invalidTestCase(error)
        }
        guard let testCase = parsed else {
            throw .invalidTestCase(
                Diagnostic(.error, at: SourceLocation(file: file, line: lineNumber, column: 1), "empty test case")
            )
        }
        if let diagnostic = unknownRuleDiagnostic(testCase) { throw .invalidTestCase(diagnostic) }
        let result = run(testCase, onError: onError)
        guard result.isPassing else { throw .testCaseFailed(result) }
    }

    /// Runs every case of the given `.test` sources and works out which rules no case exercised.
    public func runTests(_ sources: [PolicySource], onError: MatchErrorHandling = .block) -> PolicyTestReport {
        var results: [PolicyTestResult] = []
        var diagnostics: [Diagnostic] = []
        for (testCase, diagnostic) in readTestCases(sources, diagnostics: &diagnostics) {
            if let diagnostic {
                diagnostics.append(diagnostic)
            } else {
                results.append(run(testCase, onError: onError))
            }
        }
        var exercised: Set<String> = []
        for result in results {
            if let rule = result.verdict.rule { exercised.insert(rule.id) }
            exercised.formUnion(result.verdict.recorded.map(\.id))
            if let cacheRule = result.verdict.cacheRule { exercised.insert(cacheRule.id) }
        }
        return PolicyTestReport(
            results: results, diagnostics: diagnostics.sorted(),
            unexercisedRules: rules.filter { !exercised.contains($0.id) }
        )
    }

    /// Runs every `.test` file under `directory` (searched recursively, sorted by path).
    public func runTests(directory: String, onError: MatchErrorHandling = .block) throws(PolicyError)
        -> PolicyTestReport
    {
        runTests(try PolicySource.files(in: directory, withExtension: "test"), onError: onError)
    }

    /// Problems in `.test` files without running them: syntax errors and, when `checkingRuleIDs`,
    /// ids of rules the policy does not have.
    public func lintTests(_ sources: [PolicySource], checkingRuleIDs: Bool = true) -> [Diagnostic] {
        var diagnostics: [Diagnostic] = []
        for (_, diagnostic) in readTestCases(sources, diagnostics: &diagnostics) where checkingRuleIDs {
            if let diagnostic { diagnostics.append(diagnostic) }
        }
        return diagnostics.sorted()
    }

    /// Every parsed case paired with the diagnostic that stops it from running (an unknown rule).
    private func readTestCases(_ sources: [PolicySource], diagnostics: inout [Diagnostic])
        -> [(PolicyTestCase, Diagnostic?)]
    {
        var cases: [(PolicyTestCase, Diagnostic?)] = []
        for source in sources {
            do {
                let parsed = PolicyTestFileParser.parse(try SourceText(file: source.file, bytes: source.bytes))
                diagnostics += parsed.diagnostics
                cases += parsed.cases.map { ($0, unknownRuleDiagnostic($0)) }
            } catch {
                diagnostics.append(error)
            }
        }
        return cases
    }

    private func unknownRuleDiagnostic(_ testCase: PolicyTestCase) -> Diagnostic? {
        guard let ruleID = testCase.ruleID, rule(id: ruleID) == nil, let location = testCase.ruleLocation else {
            return nil
        }
        return Diagnostic(.error, at: location, "unknown rule '\(ruleID)'")
    }
}
