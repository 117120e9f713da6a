import AuditRegex

extension Policy {
    /// Decides what to do with `request`.
    ///
    /// 1. Every rule whose `methods` admit the request is matched against its field.
    /// 2. Among matching allow, block, redirect and warn rules the highest priority wins; a tie goes
    ///    to allow, then block, then redirect, then warn; then to the earliest rule.
    /// 3. Every matching record rule is listed in ``Verdict/recorded``, whatever the verdict.
    /// 4. A redirect target gets `$0`…`$9` from the rule's captures and must come out an absolute
    ///    http(s) URL.
    /// 5. When a match fails (a PCRE2 limit) or a redirect target comes out invalid, the verdict is
    ///    `block` naming that rule, unless `onError` is ``MatchErrorHandling/pass``, which ignores
    ///    the rule. Either way the failure is in ``Verdict/errors``.
    ///
    /// Only rules that can match are run: the policy's index skips every rule whose pattern needs a
    /// token the request does not carry (see README, "How evaluation stays fast"). The verdict is
    /// the one ``evaluateEveryRule(_:onError:)`` gives.
    public func evaluate(_ request: AuditRequest, onError: MatchErrorHandling = .block) -> Verdict {
        CandidateList.withEmptyList { candidates in
            var subjects = RequestSubjects()
            if !index.collectCandidates(forURLOf: request, into: &candidates) {
                index.collectCandidates(for: request, subjects: &subjects, into: &candidates)
            }
            // No rule can match: the verdict `decide` would reach, without its bookkeeping.
            guard !candidates.isEmpty else { return Verdict(action: .pass) }
            return decide(
                request, candidates: candidates.rules.lazy.map(Int.init), subjects: &subjects, onError: onError)
        }
    }

    /// ``evaluate(_:onError:)`` without the index: every rule is matched in turn.
    ///
    /// The reference the index is tested against, and the baseline of the benchmarks; slow for
    /// large policies.
    public func evaluateEveryRule(_ request: AuditRequest, onError: MatchErrorHandling = .block) -> Verdict {
        var subjects = RequestSubjects()
        return decide(request, candidates: rules.indices, subjects: &subjects, onError: onError)
    }

    /// Matches the rules at `candidates` (ascending policy order) and decides.
    private func decide<Candidates: Sequence<Int>>(
        _ request: AuditRequest, candidates ruleIndices: Candidates, subjects: inout RequestSubjects,
        onError: MatchErrorHandling
    ) -> Verdict {
        // The matching rules that decide (not record), in policy order: the first in a local, the
        // rest in an array, so that the usual single match allocates nothing.
        var firstMatch: Int?
        var laterMatches: [Int] = []
        var recorded: [Rule] = []
        var errors: [EvaluationError] = []
        var failingRule: Rule?

        for index in ruleIndices {
            let rule = rules[index]
            do {
                guard try rule.matches(request, in: &subjects) else { continue }
            } catch {
                errors.append(EvaluationError(ruleID: rule.id, reason: .matchFailed(error)))
                failingRule = failingRule ?? rule
                continue
            }
            if rule.isRecord {
                recorded.append(rule)
            } else if firstMatch == nil {
                firstMatch = index
            } else {
                laterMatches.append(index)
            }
        }
        if onError == .block, let failingRule {
            return Verdict(action: .block, rule: failingRule, recorded: recorded, errors: errors)
        }
        guard let firstMatch else { return Verdict(action: .pass, recorded: recorded, errors: errors) }
        if laterMatches.isEmpty, case let rule = rules[firstMatch], let action = rule.action.verdictAction,
            action != .redirect
        {
            return Verdict(action: action, rule: rule, recorded: recorded, errors: errors)
        }

        var candidates = [firstMatch] + laterMatches
        if candidates.count > 1 { candidates.sort(by: decidesBefore) }
        for index in candidates {
            let rule = rules[index]
            guard let action = rule.action.verdictAction else { continue }
            guard case .redirect(let template) = rule.action else {
                return Verdict(action: action, rule: rule, recorded: recorded, errors: errors)
            }
            switch redirectTarget(of: rule, template: template, request: request, subjects: &subjects) {
            case .success(let target):
                return Verdict(
                    action: .redirect, rule: rule, redirectTarget: target, recorded: recorded, errors: errors)
            case .failure(let error):
                errors.append(error)
                if onError == .block {
                    return Verdict(action: .block, rule: rule, recorded: recorded, errors: errors)
                }
            }
        }
        return Verdict(action: .pass, recorded: recorded, errors: errors)
    }

    /// ``evaluate(_:onError:)`` and the time it took, in nanoseconds.
    public func evaluateTimed(_ request: AuditRequest, onError: MatchErrorHandling = .block) -> (
        verdict: Verdict, nanoseconds: UInt64
    ) {
        let start = ContinuousClock.now
        let verdict = evaluate(request, onError: onError)
        let elapsed = ContinuousClock.now - start
        let nanoseconds =
            UInt64(elapsed.components.seconds) * 1_000_000_000
            + UInt64(elapsed.components.attoseconds / 1_000_000_000)
        return (verdict, nanoseconds)
    }

    /// Whether the rule at index `lhs` takes precedence over the rule at `rhs`.
    private func decidesBefore(_ lhs: Int, _ rhs: Int) -> Bool {
        if rules[lhs].priority != rules[rhs].priority { return rules[lhs].priority > rules[rhs].priority }
        let leftRank = rules[lhs].action.tieRank ?? 0
        let rightRank = rules[rhs].action.tieRank ?? 0
        if leftRank != rightRank { return leftRank > rightRank }
        return lhs < rhs
    }

    private func redirectTarget(
        of rule: Rule, template: RedirectTemplate, request: AuditRequest, subjects: inout RequestSubjects
    ) -> Result<String, EvaluationError> {
        guard let subject = subjects.subject(for: rule.field, of: request) else {
            return .failure(EvaluationError(ruleID: rule.id, reason: .invalidRedirectTarget(template.source)))
        }
        let match: PatternMatch?
        do {
            match = try rule.pattern.firstMatch(in: subject)
        } catch {
            return .failure(EvaluationError(ruleID: rule.id, reason: .matchFailed(error)))
        }
        let target = template.expand(groups: match?.groups ?? [])
        guard Self.isAbsoluteHTTPURL(target) else {
            return .failure(EvaluationError(ruleID: rule.id, reason: .invalidRedirectTarget(target)))
        }
        return .success(target)
    }

    /// An `http`/`https` URL with a host and no whitespace or control characters.
    static func isAbsoluteHTTPURL(_ text: String) -> Bool {
        let lower = text.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else { return false }
        guard !text.unicodeScalars.contains(where: { $0.value <= 0x20 || $0.value == 0x7F }) else { return false }
        let parts = URLParts(text)
        return !parts.host.isEmpty && !parts.host.hasPrefix(":")
    }
}
