/// What an evaluation can tell about one rule from its pattern's shape, without PCRE2, for a
/// subject of printable ASCII.
///
/// - ``condition``: every match needs it; a subject that fails it does not match. For a pattern
///   of fixed characters (``isExact``), a subject that meets it matches.
/// - ``matchesUnless``: for the shape `^(?!.*(a|b|c)).*$` ("the subject contains none of a, b, c"),
///   the condition of the lookahead's inside: a subject that fails it matches. When a, b and c are
///   each a fixed number of characters, the condition is exact (``isExactUnless``): a subject that
///   meets it does not match either.
/// - ``exactUnless``: for a pattern of fixed characters closed by a negative lookahead over fixed
///   text (`(?:buzz|com)\/(?!shrinker).*`), whether the subject contains one of the lookahead's
///   texts; where it contains none, ``condition`` (the pattern's without the lookahead) is exact.
/// - ``automaton``: for a subject that meets ``condition``, whether the pattern matches, in one
///   pass (a pattern without lookarounds, back-references or atomic parts). For a pattern with
///   lookarounds, the automaton of the pattern without them (``isRelaxedAutomaton``), which
///   matches wherever the pattern does and perhaps elsewhere: where it finds no match, the
///   pattern has none.
///
/// Built only for rules the index cannot rule out well (those run for every request, or filed
/// under a key most requests carry), where a PCRE2 call per request is what a decision costs.
struct RuleShortcut {
    let condition: MatchCondition
    /// Whether the pattern matches exactly when ``condition`` holds (a pattern of fixed characters).
    let isExact: Bool
    let matchesUnless: MatchCondition?
    let isExactUnless: Bool
    let exactUnless: MatchCondition?
    let automaton: PositionAutomaton?
    /// Whether ``automaton`` is the pattern's without its lookarounds.
    let isRelaxedAutomaton: Bool
    /// For a relaxed automaton whose pattern's lookarounds are all negative lookaheads over fixed
    /// characters (`(?!aniqit|kodikapi)`): whether the subject contains one of those texts. Where
    /// it contains none, every such lookahead succeeds, and the pattern matches exactly where the
    /// automaton does.
    let relaxedUnless: MatchCondition?

    /// The shortcut of a pattern, or nil when its shape tells nothing (or it cannot be read).
    ///
    /// `answersMatches`: whether ``matchesUnless`` may be used; a pattern whose match limits are
    /// below the defaults could fail where the shortcut says it matches, so it gets none.
    init?(pattern: String, caseInsensitive: Bool, answersMatches: Bool = true) {
        var reader = PatternSyntaxReader(pattern, caseless: caseInsensitive)
        guard let alternatives = reader.read() else { return nil }
        let caseless = reader.isCaseless
        let condition = ConditionAnalysis.condition(ofAlternatives: alternatives, caseless: caseless, atTop: true)
        if answersMatches, !reader.hasAtomicParts, let exact = Self.fixedCondition(alternatives, caseless: caseless) {
            // A pattern of fixed characters matches exactly when the condition holds.
            self.condition = exact
            self.isExact = true
            self.matchesUnless = nil
            self.isExactUnless = false
            self.exactUnless = nil
            self.automaton = nil
            self.isRelaxedAutomaton = false
            self.relaxedUnless = nil
            return
        }
        let unless = answersMatches ? Self.lookaheadCondition(alternatives, caseless: caseless) : nil
        let exactAutomaton =
            answersMatches && !reader.hasAtomicParts ? PositionAutomaton(alternatives, caseless: caseless) : nil
        // "Contains none of" lookaheads have their own answer (matchesUnless); without them, their
        // pattern matches nearly everything.
        let relaxed =
            exactAutomaton == nil && answersMatches && !reader.hasAtomicParts && unless == nil
            ? Self.relaxedAutomaton(alternatives, lookaroundBodies: reader.lookaroundBodies, caseless: caseless)
            : nil
        let automaton = exactAutomaton ?? relaxed?.automaton
        guard condition != .always || unless != nil || automaton != nil else { return nil }
        let closing =
            answersMatches && !reader.hasAtomicParts ? Self.closingLookahead(alternatives, caseless: caseless) : nil
        // The pattern without its closing lookahead matches wherever the pattern does: its exact
        // condition is a condition of the pattern.
        self.condition = closing?.exact ?? condition
        self.isExact = false
        self.matchesUnless = unless?.condition
        self.isExactUnless = unless?.isExact ?? false
        self.exactUnless = closing?.texts
        self.automaton = automaton
        self.isRelaxedAutomaton = exactAutomaton == nil && relaxed != nil
        self.relaxedUnless = exactAutomaton == nil ? relaxed?.unless : nil
    }

    /// For one alternative of fixed characters closed by a negative lookahead over fixed text,
    /// perhaps followed by `.*` or `.*$`: the exact condition of the pattern without the
    /// lookahead, and the condition that the subject contains one of the lookahead's texts; nil
    /// for any other shape. Where the subject contains none of the texts, the lookahead succeeds
    /// wherever it is tried, and the pattern matches exactly where it would without it.
    private static func closingLookahead(_ alternatives: [[PatternNode]], caseless: Bool) -> (
        exact: MatchCondition, texts: MatchCondition
    )? {
        guard alternatives.count == 1 else { return nil }
        var nodes = PatternNode.flatten(alternatives[0])
        if nodes.last == .end, nodes.count >= 2, PositionAutomaton.takesAnyRest(nodes[nodes.count - 2]) {
            nodes.removeLast(2)
        } else if let last = nodes.last, PositionAutomaton.takesAnyRest(last) {
            nodes.removeLast()
        }
        guard case .negativeLookahead(let inside) = nodes.last else { return nil }
        nodes.removeLast()
        guard let exact = fixedCondition([nodes], caseless: caseless) else { return nil }
        var texts: [MatchCondition] = []
        for choice in inside {
            guard let sequence = ConditionAnalysis.fixedSequence(PatternNode.flatten(choice), caseless: caseless),
                !sequence.isEmpty
            else { return nil }
            texts.append(.containsSequence(sequence))
        }
        return (exact, .any(of: texts))
    }

    /// The automaton of `alternatives` with their lookarounds left out, and, when those are all
    /// negative lookaheads over fixed characters, the condition that the subject contains one of
    /// their texts; nil when the pattern has no lookaround, or no automaton without them.
    ///
    /// PCRE2 still tries each lookaround where the pattern reaches it: its cost counts in the
    /// automaton's backtracking bound (`lookaroundBodies`: those of the lookarounds other than
    /// negative lookaheads, which the nodes leave out).
    private static func relaxedAutomaton(
        _ alternatives: [[PatternNode]], lookaroundBodies: [[[PatternNode]]], caseless: Bool
    ) -> (automaton: PositionAutomaton, unless: MatchCondition?)? {
        var negativeBodies: [[[PatternNode]]] = []
        var hasOtherZeroWidth = false
        func strip(_ nodes: [PatternNode]) -> [PatternNode] {
            nodes.compactMap { node in
                switch node {
                case .zeroWidth:
                    hasOtherZeroWidth = true
                    return nil
                case .negativeLookahead(let body):
                    negativeBodies.append(body)
                    return nil
                case .group(let choices): return .group(choices.map(strip))
                case .repeated(let inner, let minimum, let maximum):
                    // A repeated lookaround consumes nothing however often it is tried.
                    return strip([inner]).first.map { .repeated($0, min: minimum, max: maximum) }
                default: return node
                }
            }
        }
        let relaxed = alternatives.map(strip)
        guard !negativeBodies.isEmpty || hasOtherZeroWidth else { return nil }
        var cost: (repetitions: Int, factor: Double) = (0, 1)
        for body in lookaroundBodies + negativeBodies {
            guard let each = PositionAutomaton.lookaroundCost(body, caseless: caseless) else { return nil }
            cost = (cost.repetitions + each.repetitions, cost.factor * each.factor)
        }
        guard let automaton = PositionAutomaton(relaxed, caseless: caseless, lookaroundCost: cost) else { return nil }
        // `\b`, other lookarounds and comments all count as other zero-width nodes.
        guard !hasOtherZeroWidth else { return (automaton, nil) }
        var texts: [MatchCondition] = []
        for choice in negativeBodies.joined() {
            guard let sequence = ConditionAnalysis.fixedSequence(PatternNode.flatten(choice), caseless: caseless),
                !sequence.isEmpty
            else { return (automaton, nil) }
            texts.append(.containsSequence(sequence))
        }
        return (automaton, .any(of: texts))
    }

    /// Most fixed sequences a pattern's groups of alternatives may spell out.
    static let mostFixedSequences = 64

    /// For a pattern of fixed characters (`\/....\/`), perhaps after `^` or before `$` (not both),
    /// or alternatives of such: the condition a printable subject meets exactly when the pattern
    /// matches it.
    ///
    /// Two rewrites keep the answer exact while making more patterns fixed:
    /// - A group of fixed alternatives spells out one sequence per alternative:
    ///   `[a-z]{8}\.(com|xyz)` is `[a-z]{8}\.com` or `[a-z]{8}\.xyz`.
    /// - A repeated character that opens a pattern not anchored at its start, or closes one not
    ///   anchored at its end, needs only its fewest repetitions: where `[a-z0-9]{32,}\.js` matches,
    ///   `[a-z0-9]{32}\.js` matches further on. (Not so for possessive or atomic forms, which
    ///   give no shortcut that claims matches.)
    private static func fixedCondition(_ alternatives: [[PatternNode]], caseless: Bool) -> MatchCondition? {
        var conditions: [MatchCondition] = []
        for alternative in alternatives {
            var nodes = PatternNode.flatten(alternative)
            let isAnchoredAtStart = nodes.first == .start
            if isAnchoredAtStart { nodes.removeFirst() }
            let isAnchoredAtEnd = nodes.last == .end
            if isAnchoredAtEnd { nodes.removeLast() }
            guard !(isAnchoredAtStart && isAnchoredAtEnd) else { return nil }
            if !isAnchoredAtStart, let first = nodes.first, let fewest = fewestRepetitions(of: first) {
                nodes.replaceSubrange(0..<1, with: fewest)
            }
            if !isAnchoredAtEnd, let last = nodes.last, let fewest = fewestRepetitions(of: last) {
                nodes.replaceSubrange((nodes.count - 1)..., with: fewest)
            }
            guard let sequences = fixedSequences(spelledBy: nodes, caseless: caseless) else { return nil }
            for sequence in sequences {
                if isAnchoredAtStart {
                    conditions.append(.startsWith(sequence))
                } else if isAnchoredAtEnd {
                    conditions.append(.endsWith(sequence))
                } else {
                    conditions.append(.containsSequence(sequence))
                }
            }
            guard conditions.count <= mostFixedSequences else { return nil }
        }
        return conditions.isEmpty ? nil : .any(of: conditions)
    }

    /// A repeated node as its fewest repetitions (`x{3,}` as `xxx`), when its bounds vary.
    private static func fewestRepetitions(of node: PatternNode) -> [PatternNode]? {
        guard case .repeated(let inner, let minimum, let maximum) = node, maximum != minimum,
            minimum <= ConditionAnalysis.longestFixedSequence
        else { return nil }
        return Array(repeating: inner, count: minimum)
    }

    /// The sequences of sets `nodes` can match, one for each choice among its groups of fixed
    /// alternatives; nil unless every node is fixed, or there would be too many sequences.
    private static func fixedSequences(spelledBy nodes: [PatternNode], caseless: Bool) -> [[ASCIISet]]? {
        var sequences: [[ASCIISet]] = [[]]
        var run: [PatternNode] = []
        func endRun() -> Bool {
            guard !run.isEmpty else { return true }
            guard let sets = ConditionAnalysis.fixedSequence(run, caseless: caseless) else { return false }
            sequences = sequences.map { $0 + sets }
            run = []
            return true
        }
        for node in nodes {
            guard case .group(let choices) = node, choices.count > 1 else {
                run.append(node)
                continue
            }
            guard endRun() else { return nil }
            var spelled: [[ASCIISet]] = []
            for choice in choices {
                guard let sets = ConditionAnalysis.fixedSequence(PatternNode.flatten(choice), caseless: caseless)
                else { return nil }
                spelled.append(sets)
            }
            guard sequences.count * spelled.count <= mostFixedSequences else { return nil }
            sequences = sequences.flatMap { prefix in spelled.map { prefix + $0 } }
        }
        guard endRun() else { return nil }
        let longest = sequences.map(\.count).max() ?? 0
        return longest > 0 && longest <= ConditionAnalysis.longestFixedSequence ? sequences : nil
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
