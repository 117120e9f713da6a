/// The outcome of running one ``PolicyTestCase``.
public struct PolicyTestResult: Sendable, Equatable, CustomStringConvertible {
    /// The case that ran.
    public let testCase: PolicyTestCase
    /// The verdict the policy gave.
    public let verdict: Verdict
    /// What the case expected, in words, e.g. `block by competitor/rival-shop`.
    public let expected: String
    /// What happened, in the same words, e.g. `pass`.
    public let actual: String
    /// Whether the expectation held.
    public let isPassing: Bool

    init(testCase: PolicyTestCase, verdict: Verdict) {
        self.testCase = testCase
        self.verdict = verdict
        let recordedIDs = verdict.recorded.map(\.id)
        switch testCase.expectation {
        case .record:
            let ruleID = testCase.ruleID ?? "-"
            expected = "\(ruleID) among the recorded rules"
            actual = recordedIDs.isEmpty ? "no rule recorded" : "recorded " + recordedIDs.joined(separator: ", ")
            isPassing = recordedIDs.contains(ruleID)
        case .cache:
            let ruleID = testCase.ruleID ?? "-"
            expected = "cache by \(ruleID)"
            actual = verdict.cacheRule.map { "cache by \($0.id)" } ?? "no cache rule"
            isPassing = verdict.cacheRule?.id == ruleID
        default:
            var text = testCase.expectation.rawValue
            if let ruleID = testCase.ruleID { text += " by \(ruleID)" }
            if let target = testCase.redirectTarget { text += " -> \(target)" }
            if let status = testCase.responseStatus { text += " -> \(status)" }
            expected = text
            actual =
                verdict.description
                + (verdict.errors.isEmpty
                    ? "" : " (errors: \(verdict.errors.map(\.description).joined(separator: "; ")))")
            isPassing =
                testCase.expectation.rawValue == verdict.action.rawValue
                && (testCase.ruleID == nil || testCase.ruleID == verdict.rule?.id)
                && (testCase.redirectTarget == nil || testCase.redirectTarget == verdict.redirectTarget)
                && (testCase.responseStatus == nil || testCase.responseStatus == verdict.response?.status)
        }
    }

    /// `PASS`/`FAIL`, where, the case, and for a failure the expected and actual outcomes.
    public var description: String {
        let place = testCase.location.map { "\($0.file):\($0.line): " } ?? ""
        guard !isPassing else { return "PASS \(place)\(testCase)" }
        return """
            FAIL \(place)\(testCase)
                 expected: \(expected)
                   actual: \(actual)
            """
    }
}
