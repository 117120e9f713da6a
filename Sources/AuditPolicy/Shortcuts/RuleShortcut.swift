/// What an evaluation can tell about one rule from its pattern's shape, without PCRE2, for a
/// subject of printable ASCII.
///
/// - ``condition``: every match needs it; a subject that fails it does not match. For a pattern
///   of fixed characters (``isExact``), a subject that meets it matches.
/// - ``matchesUnless``: for the shape `^(?!.*(a|b|c)).*$` ("the subject contains none of a, b, c"),
///   the condition of the lookahead's inside: a subject that fails it matches. When a, b and c are
///   each a fixed number of characters, the condition is exact (``isExactUnless``): a subject that
///   meets it does not match either.
///
/// Built only for rules the index cannot rule out well (those run for every request, or filed
/// under a key most requests carry), where a PCRE2 call per request is what a decision costs.
struct RuleShortcut: Hashable {
    let condition: MatchCondition
    /// Whether the pattern matches exactly when ``condition`` holds (a pattern of fixed characters).
    let isExact: Bool
    let matchesUnless: MatchCondition?
    let isExactUnless: Bool

    /// The shortcut of a pattern, or nil when its shape tells nothing (or it cannot be read).
    ///
    /// `answersMatches`: whether ``matchesUnless`` may be used; a pattern whose match limits are
    /// below the defaults could fail where the shortcut says it matches, so it gets none.
    init?(pattern: String, caseInsensitive: Bool, answersMatches: Bool = true) {
        var reader = PatternSyntaxReader(pattern, caseless: caseInsensitive)
        guard let alternatives = reader.read() else { return nil }
        let caseless = reader.isCaseless
        let condition = ConditionAnalysis.condition(ofAlternatives: alternatives, caseless: caseless, atTop: true)
        if answersMatches, let exact = Self.fixedCondition(alternatives, caseless: caseless) {
            // A pattern of fixed characters matches exactly when the condition holds.
            self.condition = exact
            self.isExact = true
            self.matchesUnless = nil
            self.isExactUnless = false
            return
        }
        let unless = answersMatches ? Self.lookaheadCondition(alternatives, caseless: caseless) : nil
        guard condition != .always || unless != nil else { return nil }
        self.condition = condition
        self.isExact = false
        self.matchesUnless = unless?.condition
        self.isExactUnless = unless?.isExact ?? false
    }

    /// For a pattern of fixed characters (`\/....\/`), perhaps after `^` or before `$` (not both):
    /// the condition a printable subject meets exactly when the pattern matches it.
    private static func fixedCondition(_ alternatives: [[PatternNode]], caseless: Bool) -> MatchCondition? {
        guard alternatives.count == 1 else { return nil }
        var nodes = PatternNode.flatten(alternatives[0])
        let isAnchoredAtStart = nodes.first == .start
        if isAnchoredAtStart { nodes.removeFirst() }
        let isAnchoredAtEnd = nodes.last == .end
        if isAnchoredAtEnd { nodes.removeLast() }
        guard !(isAnchoredAtStart && isAnchoredAtEnd),
            let sequence = ConditionAnalysis.fixedSequence(nodes, caseless: caseless)
        else { return nil }
        if isAnchoredAtStart { return .startsWith(sequence) }
        if isAnchoredAtEnd { return .endsWith(sequence) }
        return .containsSequence(sequence)
    }

    /// For `^(?!X).*$` (and `^(?!X)`, `^(?!X).*`): what a subject must have for X to match at its
    /// start, X usually being `.*(a|b|c)`; nil for any other shape.
    private static func lookaheadCondition(_ alternatives: [[PatternNode]], caseless: Bool) -> (
        condition: MatchCondition, isExact: Bool
    )? {
        guard alternatives.count == 1, alternatives[0].count >= 2, alternatives[0][0] == .start,
            case .negativeLookahead(let inside) = alternatives[0][1]
        else { return nil }
        // What follows must match every printable subject: `.*`, `$`.
        for node in alternatives[0].dropFirst(2) {
            switch node {
            case .end: continue
            case .repeated(let inner, 0, nil):
                guard let set = ConditionAnalysis.singleCharacterSet(inner, caseless: caseless),
                    set.isSuperset(of: .printable)
                else { return nil }
            default: return nil
            }
        }
        if let sequences = fixedSequences(inside, caseless: caseless) {
            return (.any(of: sequences.map(MatchCondition.containsSequence)), true)
        }
        let condition = ConditionAnalysis.condition(ofAlternatives: inside, caseless: caseless, atTop: false)
        return condition == .always ? nil : (condition, false)
    }

    /// For a lookahead `(?!.*X)` whose X is fixed characters or a group of alternatives that are:
    /// each alternative's sets (X matches somewhere exactly when one of them occurs); else nil.
    private static func fixedSequences(_ inside: [[PatternNode]], caseless: Bool) -> [[ASCIISet]]? {
        var sequences: [[ASCIISet]] = []
        for alternative in inside {
            var nodes = PatternNode.flatten(alternative)
            guard case .repeated(let inner, 0, nil) = nodes.first,
                let set = ConditionAnalysis.singleCharacterSet(inner, caseless: caseless),
                set.isSuperset(of: .printable)
            else { return nil }
            nodes.removeFirst()
            if nodes.count == 1, case .group(let choices) = nodes[0] {
                for choice in choices {
                    guard
                        let sequence = ConditionAnalysis.fixedSequence(
                            PatternNode.flatten(choice), caseless: caseless)
                    else { return nil }
                    sequences.append(sequence)
                }
            } else {
                guard let sequence = ConditionAnalysis.fixedSequence(nodes, caseless: caseless) else { return nil }
                sequences.append(sequence)
            }
        }
        return sequences
    }
}
