import AuditRegex

extension Policy {
    /// Decides what to do with `request`.
    ///
    /// 1. Every rule whose `methods` admit the request is matched against its field.
    /// 2. Among matching allow, block, respond, redirect and warn rules the highest priority wins; a
    ///    tie goes to allow, then block, then respond, then redirect, then warn; then to the earliest
    ///    rule.
    /// 3. Every matching record rule is listed in ``Verdict/recorded``, whatever the verdict; the
    ///    matching cache rule of highest priority (then the earliest) is ``Verdict/cacheRule``.
    /// 4. A redirect target gets `$0`…`$9` from the rule's captures and must come out an absolute
    ///    http(s) URL; a `respond` body gets them too (escaped for JSON when its type is JSON).
    /// 5. When a match fails (a PCRE2 limit) or a redirect target comes out invalid, the verdict is
    ///    `block` naming that rule, unless `onError` is ``MatchErrorHandling/pass``, which ignores
    ///    the rule. Either way the failure is in ``Verdict/errors``.
    ///
    /// Only rules that can match are run: the policy's index skips every rule whose pattern needs a
    /// token the request does not carry (see `docs/how-the-index-works.md`). The verdict is
    /// the one ``evaluateEveryRule(_:onError:)`` gives.
    public func evaluate(_ request: AuditRequest, onError: MatchErrorHandling = .block) -> Verdict {
        if let problem = request.hostHeaderContradiction { return Verdict.refusing(contradictoryHost: problem) }
        return CandidateList.withEmptyList { candidates in
            // Most URLs are sent canonical: then the index scans them as sent.
            let isCanonical = URLParts.isCanonical(request.url)
            let isCollectedFromURL = isCanonical && index.collectCandidates(forURLOf: request, into: &candidates)
            // Most requests: no rule can match, and no subject is made or dropped.
            if isCollectedFromURL, candidates.isEmpty { return Verdict(action: .pass) }
            var subjects = RequestSubjects()
            subjects.isURLCanonical = isCanonical
            if !isCanonical, let rejection = subjects.rejection(of: request) { return Verdict.refusing(rejection) }
            if !isCollectedFromURL {
                index.collectCandidates(
                    for: request, isURLCanonical: isCanonical, subjects: &subjects, into: &candidates)
            }
            index.shortcuts.answer(&candidates, for: request, subjects: &subjects)
            // No rule can match: the verdict `decide` would reach, without its bookkeeping.
            guard !candidates.isEmpty else { return Verdict(action: .pass) }
            return decide(request, candidates: candidates, subjects: &subjects, onError: onError)
        }
    }

    /// ``evaluate(_:onError:)`` without the index: every rule is matched in turn.
    ///
    /// The reference the index is tested against, and the baseline of the benchmarks; slow for
    /// large policies.
    public func evaluateEveryRule(_ request: AuditRequest, onError: MatchErrorHandling = .block) -> Verdict {
        if let problem = request.hostHeaderContradiction { return Verdict.refusing(contradictoryHost: problem) }
        var subjects = RequestSubjects()
        if let rejection = subjects.rejection(of: request) { return Verdict.refusing(rejection) }
        return CandidateList.withEmptyList { everyRule in
            for index in rules.indices { everyRule.append(Int32(truncatingIfNeeded: index)) }
            return decide(request, candidates: everyRule, subjects: &subjects, onError: onError)
        }
    }

    /// Matches the rules at `candidates` (ascending policy order) and decides; a candidate marked
    /// ``CandidateList/matchesForSure`` is known to match if its methods admit the request.
    private func decide(
        _ request: AuditRequest, candidates: borrowing CandidateList, subjects: inout RequestSubjects,
        onError: MatchErrorHandling
    ) -> Verdict {
        // The matching rules that decide (not record), in policy order, on the stack.
        CandidateList.withEmptyList { matches in
            var recorded: [Rule] = []
            var cacheRule: Rule?
            var errors: [EvaluationError] = []
            var failingRule: Rule?

            // Each candidate is read in place (`rules[index]`), not bound to a copy: that would
            // cost a reference count for every candidate, and most do not match.
            for position in 0..<candidates.count {
                let candidate = Int(candidates[position])
                let index = candidate & ~Int(CandidateList.matchesForSure)
                do throws(PatternError) {
                    if candidate != index {
                        guard rules[index].applies(toMethod: request.method) else { continue }
                    } else {
                        guard try rules[index].matches(request, in: &subjects) else { continue }
                    }
                } catch {
                    errors.append(EvaluationError(ruleID: rules[index].id, reason: .matchFailed(error)))
                    failingRule = failingRule ?? rules[index]
                    continue
                }
                if rules[index].isNonDeciding {
                    if rules[index].cacheSettings == nil {
                        recorded.append(rules[index])
                    } else if cacheRule.map({ rules[index].priority > $0.priority }) ?? true {
                        cacheRule = rules[index]
                    }
                } else {
                    matches.append(Int32(truncatingIfNeeded: index))
                }
            }
            if onError == .block, let failingRule {
                return Verdict(
                    action: .block, rule: failingRule, recorded: recorded, cacheRule: cacheRule, errors: errors)
            }
            // The winner is the match that decides before every other; a redirect whose target
            // fails is dropped (with `.pass`) and the next winner taken. No sort: most requests
            // have one or two matches, and a failed redirect is rare.
            while let winner = firstDeciding(among: matches) {
                let rule = rules[winner]
                guard let action = rule.action.verdictAction else {
                    // A record rule is never among the matches; were one there, it would not decide.
                    matches.remove(Int32(truncatingIfNeeded: winner))
                    continue
                }
                if case .respond(let responder) = rule.action {
                    switch response(of: rule, responder: responder, request: request, subjects: &subjects) {
                    case .success(let response):
                        return Verdict(
                            action: .respond, rule: rule, response: response, recorded: recorded, cacheRule: cacheRule,
                            errors: errors)
                    case .failure(let error):
                        errors.append(error)
                        if onError == .block {
                            return Verdict(
                                action: .block, rule: rule, recorded: recorded, cacheRule: cacheRule, errors: errors)
                        }
                        matches.remove(Int32(truncatingIfNeeded: winner))
                        continue
                    }
                }
                guard case .redirect(let template) = rule.action else {
                    return Verdict(action: action, rule: rule, recorded: recorded, cacheRule: cacheRule, errors: errors)
                }
                switch redirectTarget(of: rule, template: template, request: request, subjects: &subjects) {
                case .success(let target):
                    return Verdict(
                        action: .redirect, rule: rule, redirectTarget: target, recorded: recorded, cacheRule: cacheRule,
                        errors: errors)
                case .failure(let error):
                    errors.append(error)
                    if onError == .block {
                        return Verdict(
                            action: .block, rule: rule, recorded: recorded, cacheRule: cacheRule, errors: errors)
                    }
                }
                matches.remove(Int32(truncatingIfNeeded: winner))
            }
            return Verdict(action: .pass, recorded: recorded, cacheRule: cacheRule, errors: errors)
        }
    }

    /// The rule among `matches` that decides before every other (see ``decidesBefore(_:_:)``), or
    /// nil when there is none.
    private func firstDeciding(among matches: borrowing CandidateList) -> Int? {
        guard !matches.isEmpty else { return nil }
        var best = Int(matches[0])
        for position in 1..<matches.count where decidesBefore(Int(matches[position]), best) {
            best = Int(matches[position])
        }
        return best
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
        if rules[lhs].tieRank != rules[rhs].tieRank { return rules[lhs].tieRank > rules[rhs].tieRank }
        return lhs < rhs
    }

    private func redirectTarget(
        of rule: Rule, template: RedirectTemplate, request: AuditRequest, subjects: inout RequestSubjects
    ) -> Result<String, EvaluationError> {
        let groups: [String?]
        switch captures(of: rule, request: request, subjects: &subjects) {
        case .success(let captured): groups = captured
        case .failure(let error): return .failure(error)
        }
        let target = template.expand(groups: groups)
        guard Self.isAbsoluteHTTPURL(target) else {
            return .failure(EvaluationError(ruleID: rule.id, reason: .invalidRedirectTarget(target)))
        }
        return .success(target)
    }

    /// The response `responder` gives for `request`: its body with the rule's captures substituted.
    private func response(
        of rule: Rule, responder: LocalResponder, request: AuditRequest, subjects: inout RequestSubjects
    ) -> Result<LocalResponse, EvaluationError> {
        guard case .body(let template) = responder.source, template.highestGroup != nil else {
            return .success(responder.response(groups: []))
        }
        return captures(of: rule, request: request, subjects: &subjects).map { responder.response(groups: $0) }
    }

    /// The groups of `rule`'s first match in its field of `request` (index 0 is the whole match);
    /// empty when the field is absent.
    private func captures(
        of rule: Rule, request: AuditRequest, subjects: inout RequestSubjects
    ) -> Result<[String?], EvaluationError> {
        guard let subject = subjects.subject(for: rule.field, of: request) else { return .success([]) }
        do {
            return .success(try rule.pattern.firstMatch(in: subject)?.groups ?? [])
        } catch {
            return .failure(EvaluationError(ruleID: rule.id, reason: .matchFailed(error)))
        }
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
