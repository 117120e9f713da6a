/// A pattern as a position automaton (Glushkov's construction): one state per character of the
/// pattern, repetitions written out, all states tracked at once in the bits of one word. It
/// tells whether the pattern matches a subject of printable ASCII in one pass, whatever the
/// pattern's backtracking would cost PCRE2 (`:\/\/[^\s]+(.club|.com)\/`, `([a-z]+\/){5,}`).
///
/// Built only for patterns whose matches are a regular language: literals, classes, groups,
/// alternatives and repetitions, anchored by `^` and `$` at their ends or not at all, and
/// perhaps closed by a negative lookahead over fixed characters (`com\/(?!shrinker)`), checked
/// where each match ends. Other lookarounds, back-references, `\b` and the possessive or atomic
/// forms (which the syntax reader does not tell from their backtracking forms) give no
/// automaton, nor does a pattern of more than 64 characters once its repetitions are written out.
/// A pattern anchored at its end is run backwards, from the subject's end.
///
/// PCRE2 fails a match that backtracks past its match limit, and the verdict then names the
/// failure: an automaton must not answer where PCRE2 might fail. A pattern whose backtracking can
/// grow exponentially (a group repeated a varying number of times that can match more than one
/// way from one start, `(a|ab)+`, `(.{2,4})+`) gets no automaton. Otherwise PCRE2's work grows as
/// a power of the subject's length, one more for each repetition that can end in more than one
/// place (`[^/]+` before `.`, not `[a-z]+` before `/` or `$`): the automaton answers only for
/// subjects short enough that this bound stays a tenth of PCRE2's default match limit.
struct PositionAutomaton: Sendable {
    /// Entry `b`: the states whose character is byte `b`.
    private let statesByByte: [UInt64]
    /// The states a match can start in, and end in.
    private let first: UInt64
    private let last: UInt64
    /// Bit `p + 1` set when state `p` may be followed by state `p + 1` (most are).
    private let followedByNext: UInt64
    /// The states that may follow themselves (`[a-z]+`, `.*`).
    private let followedBySelf: UInt64
    /// The states followed by others than the next, and those others by state.
    private let jumpers: UInt64
    private let jumps: [UInt64]
    /// Whether the pattern matches the empty text.
    private let isNullable: Bool
    /// Whether the states are the reversed pattern's, run from the subject's end back; the
    /// anchors below are then the reversed pattern's too.
    private let isReversed: Bool
    private let isAnchoredAtStart: Bool
    private let isAnchoredAtEnd: Bool
    /// The one byte every match starts with, searched for with `memchr` while no state is live.
    private let firstByte: UInt8?
    /// A closing `(?!…)`: a match may not end where one of these sequences of sets starts.
    private let forbiddenAfter: [[ASCIISet]]
    /// The longest subject answered (see the backtracking bound above).
    let longestSubject: Int

    /// PCRE2's default match limit, a tenth of which bounds the backtracking of a pattern the
    /// automaton answers for.
    static let backtrackingBound = 1_000_000.0

    /// Most states an automaton may have: the bits of its word.
    static let mostStates = 64

    /// The automaton of a pattern read as `alternatives` (see ``PatternSyntaxReader``), or nil
    /// when it has no exact one.
    ///
    /// `lookaroundCost` is what the lookarounds left out of `alternatives` cost PCRE2 each time it
    /// tries them (see ``lookaroundCost(_:caseless:)``): repetitions added to the pattern's
    /// ambiguous ones, and a factor, in the backtracking bound.
    init?(
        _ alternatives: [[PatternNode]], caseless: Bool,
        lookaroundCost: (repetitions: Int, factor: Double) = (0, 1)
    ) {
        var builder = Builder(caseless: caseless)
        var anchoring: (start: Bool, end: Bool)?
        var sequences: [[PatternNode]] = []
        var forbiddenAfter: [[ASCIISet]] = []
        for alternative in alternatives {
            var nodes = PatternNode.flatten(alternative)
            let start = nodes.first == .start
            if start { nodes.removeFirst() }
            // `.*` or `.*$` at the end takes whatever rest a printable subject has.
            if nodes.last == .end, nodes.count >= 2, Self.takesAnyRest(nodes[nodes.count - 2]) {
                nodes.removeLast(2)
            } else if let last = nodes.last, Self.takesAnyRest(last) {
                nodes.removeLast()
            }
            let end = nodes.last == .end
            if end { nodes.removeLast() }
            if !end, alternatives.count == 1, case .negativeLookahead(let inside) = nodes.last {
                for choice in inside {
                    guard
                        let sequence = ConditionAnalysis.fixedSequence(PatternNode.flatten(choice), caseless: caseless)
                    else { return nil }
                    forbiddenAfter.append(sequence)
                }
                nodes.removeLast()
            }
            // Alternatives anchored differently would need a start and an end per state.
            if let anchoring, anchoring != (start, end) { return nil }
            anchoring = (start, end)
            sequences.append(nodes)
        }
        guard let anchoring else { return nil }
        // A pattern anchored at its end is read from the end back: most subjects leave it at
        // once (`\/[a-z0-9]+\/\d+$` at the last non-digit), where reading forward would carry
        // its opening states through the whole subject.
        let isReversed = anchoring.end
        var fragments: [Builder.Fragment] = []
        for nodes in sequences {
            guard let fragment = builder.sequence(isReversed ? Self.reversed(nodes) : nodes) else { return nil }
            fragments.append(fragment)
        }
        guard
            let repetitions = Self.ambiguousRepetitions(alternatives.map(PatternNode.flatten), caseless: caseless)
        else { return nil }
        longestSubject = Self.longestSubject(
            ambiguousRepetitions: repetitions + lookaroundCost.repetitions, factor: lookaroundCost.factor)
        let whole = builder.union(fragments)
        // Empty matches, which end wherever they start, are not followed by the lookahead check.
        if whole.isNullable, !forbiddenAfter.isEmpty { return nil }
        var followedByNext: UInt64 = 0
        var followedBySelf: UInt64 = 0
        var jumpers: UInt64 = 0
        var jumps = [UInt64](repeating: 0, count: builder.sets.count)
        for state in builder.sets.indices {
            let next: UInt64 = state + 1 < Self.mostStates ? 1 << UInt64(state + 1) : 0
            let follow = builder.follow[state]
            let own = UInt64(1) << UInt64(state)
            if follow & next != 0 { followedByNext |= next }
            if follow & own != 0 { followedBySelf |= own }
            let others = follow & ~next & ~own
            if others != 0 {
                jumpers |= 1 << UInt64(state)
                jumps[state] = others
            }
        }
        var statesByByte = [UInt64](repeating: 0, count: 128)
        for (state, set) in builder.sets.enumerated() {
            for byte in 0..<128 where set.contains(UInt8(byte)) { statesByByte[byte] |= 1 << UInt64(state) }
        }
        let firstBytes = (0..<128).filter { statesByByte[$0] & whole.first != 0 }
        self.statesByByte = statesByByte
        self.first = whole.first
        self.last = whole.last
        self.followedByNext = followedByNext
        self.followedBySelf = followedBySelf
        self.jumpers = jumpers
        self.jumps = jumps
        self.isNullable = whole.isNullable
        self.isReversed = isReversed
        self.isAnchoredAtStart = isReversed ? anchoring.end : anchoring.start
        self.isAnchoredAtEnd = isReversed ? anchoring.start : anchoring.end
        self.firstByte = firstBytes.count == 1 ? UInt8(firstBytes[0]) : nil
        self.forbiddenAfter = forbiddenAfter
    }

    /// The longest subject `n` for which `factor × (n + 1)^(repetitions + 1)` stays within
    /// ``backtrackingBound``.
    private static func longestSubject(ambiguousRepetitions repetitions: Int, factor: Double = 1) -> Int {
        func fits(_ length: Int) -> Bool {
            var work = factor
            for _ in 0...repetitions { work *= Double(length + 1) }
            return work <= backtrackingBound
        }
        var (low, high) = (0, Int(backtrackingBound))
        while low < high {
            let middle = (low + high + 1) / 2
            if fits(middle) { low = middle } else { high = middle - 1 }
        }
        return low
    }

    /// What PCRE2 spends on a lookaround whose inside is `body` each time it tries it: for fixed
    /// characters (`(?!aniqit|kodikapi)`), a step per character, a factor on the pattern's work;
    /// otherwise a cost that grows with the subject's length one power more than the inside's own
    /// ambiguous repetitions. Nil when its backtracking can grow exponentially.
    static func lookaroundCost(_ body: [[PatternNode]], caseless: Bool) -> (repetitions: Int, factor: Double)? {
        let alternatives = body.map(PatternNode.flatten)
        let fixed = alternatives.compactMap { ConditionAnalysis.fixedSequence($0, caseless: caseless) }
        if fixed.count == alternatives.count { return (0, Double(max(1, fixed.map(\.count).reduce(0, +)))) }
        return ambiguousRepetitions(alternatives, caseless: caseless, followedBy: .all).map { ($0 + 1, 1) }
    }

    /// How many repetitions of `alternatives` can end in more than one place in one attempt,
    /// followed by what they are followed by; nil when backtracking can grow exponentially.
    private static func ambiguousRepetitions(
        _ alternatives: [[PatternNode]], caseless: Bool, followedBy following: ASCIISet? = nil
    ) -> Int? {
        var most = 0
        for nodes in alternatives {
            var count = 0
            for (position, node) in nodes.enumerated() {
                // What can come right after this node: nil for nothing (the pattern's end). `$`
                // admits nothing more: the subjects answered are printable, with no final newline.
                let next: ASCIISet? =
                    position + 1 < nodes.count
                    ? (nodes[position + 1] == .end
                        ? ASCIISet()
                        : ConditionAnalysis.singleCharacterSet(nodes[position + 1], caseless: caseless) ?? .all)
                    : following
                switch node {
                case .repeated(let inner, let minimum, let maximum) where maximum != minimum:
                    if let set = ConditionAnalysis.singleCharacterSet(inner, caseless: caseless) {
                        if let next, !next.isDisjoint(with: set) { count += 1 }
                        continue
                    }
                    // A group repeated a varying number of times: only one that matches one way
                    // from wherever it starts, so that only the number of repetitions varies.
                    guard case .group(let choices) = inner, choices.count == 1,
                        matchesOneWay(PatternNode.flatten(choices[0]), caseless: caseless)
                    else { return nil }
                    count += 1
                case .repeated(let inner, let minimum, _):
                    guard let inside = ambiguousRepetitions([[inner]], caseless: caseless, followedBy: .all) else {
                        return nil
                    }
                    count += minimum * inside
                case .group(let choices):
                    guard
                        let inside = ambiguousRepetitions(
                            choices.map(PatternNode.flatten), caseless: caseless, followedBy: next)
                    else { return nil }
                    count += inside
                default:
                    continue
                }
            }
            most = max(most, count)
        }
        return most
    }

    /// Whether `nodes` match at most one way from any start, and never the empty text: single
    /// characters, and repetitions of one character each followed by a character outside its set
    /// (`[^/]+\/`, `[a-z0-9-]+\.`).
    private static func matchesOneWay(_ nodes: [PatternNode], caseless: Bool) -> Bool {
        var isNullable = true
        for (position, node) in nodes.enumerated() {
            if ConditionAnalysis.singleCharacterSet(node, caseless: caseless) != nil {
                isNullable = false
                continue
            }
            guard case .repeated(let inner, let minimum, let maximum) = node,
                let set = ConditionAnalysis.singleCharacterSet(inner, caseless: caseless)
            else { return false }
            if minimum > 0 { isNullable = false }
            guard maximum != minimum else { continue }
            guard position + 1 < nodes.count,
                let next = ConditionAnalysis.singleCharacterSet(nodes[position + 1], caseless: caseless),
                next.isDisjoint(with: set)
            else { return false }
        }
        return !isNullable
    }

    /// `nodes` read backwards: the sequence reversed, and each group's alternatives in it.
    private static func reversed(_ nodes: [PatternNode]) -> [PatternNode] {
        nodes.reversed().map { node in
            switch node {
            case .group(let alternatives): .group(alternatives.map(reversed))
            case .repeated(let inner, let minimum, let maximum):
                .repeated(reversed([inner])[0], min: minimum, max: maximum)
            default: node
            }
        }
    }

    /// Whether `node` is `.*` or the like: any number of any printable characters.
    static func takesAnyRest(_ node: PatternNode) -> Bool {
        guard case .repeated(let inner, 0, nil) = node,
            let set = ConditionAnalysis.singleCharacterSet(inner, caseless: false, exactOnly: true)
        else { return false }
        return set.isSuperset(of: .printable)
    }

    /// Whether a match may end at `position`: no sequence of ``forbiddenAfter`` starts there.
    private func mayEnd(at position: Int, in bytes: Span<UInt8>) -> Bool {
        forbidding: for sequence in forbiddenAfter {
            guard position + sequence.count <= bytes.count else { continue }
            for (offset, set) in sequence.enumerated() where !set.contains(bytes[position + offset]) {
                continue forbidding
            }
            return false
        }
        return true
    }

    /// Whether the pattern matches `bytes`, all of them printable ASCII (0x20–0x7E); nil for a
    /// subject longer than ``longestSubject``.
    func matches(_ bytes: Span<UInt8>) -> Bool? {
        let count = bytes.count
        guard count <= longestSubject else { return nil }
        if isNullable, forbiddenAfter.isEmpty, !isAnchoredAtEnd || (!isAnchoredAtStart || count == 0) {
            return true
        }
        let (table, jumps) = (statesByByte.span, self.jumps.span)
        let (followedByNext, followedBySelf, jumpers, first, last) = (
            self.followedByNext, self.followedBySelf, self.jumpers, self.first, self.last
        )
        var live: UInt64 = 0
        var position = 0
        while position < count {
            if live == 0 {
                if isAnchoredAtStart, position > 0 { return false }
                if let firstByte, !isAnchoredAtStart {
                    guard let found = bytes.firstIndex(of: firstByte, from: position, to: count) else { return false }
                    position = found
                }
            }
            var next = (live &<< 1) & followedByNext | live & followedBySelf
            var jumping = live & jumpers
            while jumping != 0 {
                next |= jumps[jumping.trailingZeroBitCount]
                jumping &= jumping &- 1
            }
            if !isAnchoredAtStart || position == 0 { next |= first }
            let byte = isReversed ? bytes[count - 1 - position] : bytes[position]
            live = next & table[Int(byte & 0x7F)]
            position += 1
            if live & last != 0, !isAnchoredAtEnd || position == count, mayEnd(at: position, in: bytes) {
                return true
            }
        }
        return false
    }

    /// Numbers the characters of a pattern and records which may follow which.
    private struct Builder {
        /// What a piece of pattern contributes: the states its matches can start and end in, and
        /// whether it matches the empty text.
        struct Fragment {
            var first: UInt64 = 0
            var last: UInt64 = 0
            var isNullable = true
        }

        let caseless: Bool
        /// State `p`'s character, and the states that may follow it.
        var sets: [ASCIISet] = []
        var follow: [UInt64] = []

        init(caseless: Bool) { self.caseless = caseless }

        mutating func sequence(_ nodes: [PatternNode]) -> Fragment? {
            var whole = Fragment()
            for node in nodes {
                guard let next = self.node(node) else { return nil }
                whole = concatenate(whole, next)
            }
            return whole
        }

        func union(_ fragments: [Fragment]) -> Fragment {
            var whole = Fragment(isNullable: false)
            for fragment in fragments {
                whole.first |= fragment.first
                whole.last |= fragment.last
                whole.isNullable = whole.isNullable || fragment.isNullable
            }
            return whole
        }

        private mutating func concatenate(_ left: Fragment, _ right: Fragment) -> Fragment {
            link(left.last, to: right.first)
            return Fragment(
                first: left.first | (left.isNullable ? right.first : 0),
                last: right.last | (right.isNullable ? left.last : 0),
                isNullable: left.isNullable && right.isNullable)
        }

        private mutating func link(_ states: UInt64, to next: UInt64) {
            var remaining = states
            while remaining != 0 {
                follow[remaining.trailingZeroBitCount] |= next
                remaining &= remaining &- 1
            }
        }

        private mutating func state(_ set: ASCIISet) -> Fragment? {
            guard sets.count < PositionAutomaton.mostStates else { return nil }
            sets.append(set)
            follow.append(0)
            let bit = UInt64(1) << UInt64(sets.count - 1)
            return Fragment(first: bit, last: bit, isNullable: false)
        }

        private mutating func node(_ node: PatternNode) -> Fragment? {
            switch node {
            case .literal(let byte):
                var set = ASCIISet(byte)
                if caseless { set.addOtherCases() }
                return state(set)
            case .character(let byteClass):
                return byteClass.isExact ? state(byteClass.ascii) : nil
            case .group(let alternatives):
                var fragments: [Fragment] = []
                for alternative in alternatives {
                    guard let fragment = sequence(PatternNode.flatten(alternative)) else { return nil }
                    fragments.append(fragment)
                }
                return union(fragments)
            case .repeated(let inner, let minimum, let maximum):
                // x{2,4} is x x x? x?, x{2,} is x x x*: the same matches, each copy its own states.
                var whole = Fragment()
                for _ in 0..<minimum {
                    guard let copy = self.node(inner) else { return nil }
                    whole = concatenate(whole, copy)
                }
                if let maximum {
                    for _ in minimum..<maximum {
                        guard var copy = self.node(inner) else { return nil }
                        copy.isNullable = true
                        whole = concatenate(whole, copy)
                    }
                } else {
                    guard var copy = self.node(inner) else { return nil }
                    link(copy.last, to: copy.first)
                    copy.isNullable = true
                    whole = concatenate(whole, copy)
                }
                return whole
            case .start, .end, .zeroWidth, .negativeLookahead, .authority, .backReference:
                return nil
            }
        }
    }
}
