/// Something a printable-ASCII subject must have for a pattern to match, read from the pattern's
/// syntax: literal text it contains, a long enough run of bytes from a class, bytes it starts or
/// ends with, and combinations of these.
///
/// A condition is *necessary*: a subject that fails it cannot match, and one that meets it may or
/// may not (PCRE2 then decides). Conditions speak only of subjects made of printable ASCII
/// (0x20–0x7E): there `.` is any byte, `$` is the end, and no character folds onto a letter from
/// outside ASCII (see ``ShortcutTable``).
indirect enum MatchCondition: Hashable {
    /// Every subject meets it.
    case always
    /// No subject meets it (the pattern needs a character that is not ASCII).
    case never
    /// The subject contains these bytes, compared without case (ASCII letters lower-cased here).
    case contains([UInt8])
    /// The subject has at least `minimum` consecutive bytes from `set`.
    case run(ASCIISet, minimum: Int)
    /// The subject's first bytes are, in turn, in these sets.
    case startsWith([ASCIISet])
    /// The subject's last bytes are, in turn, in these sets.
    case endsWith([ASCIISet])
    /// Some bytes of the subject are, in turn, in these sets: exactly what a pattern of that many
    /// fixed characters (`google.com`, whose `.` is any byte) needs to match somewhere.
    case containsSequence([ASCIISet])
    /// Every condition holds.
    case all([MatchCondition])
    /// Some condition holds.
    case any([MatchCondition])

    /// All of `conditions`, simplified: `always` dropped, `never` absorbing, nesting flattened.
    static func all(of conditions: [MatchCondition]) -> MatchCondition {
        var kept: [MatchCondition] = []
        for condition in conditions {
            switch condition {
            case .always: continue
            case .never: return .never
            case .all(let inner): kept += inner
            default: if !kept.contains(condition) { kept.append(condition) }
            }
        }
        return kept.isEmpty ? .always : kept.count == 1 ? kept[0] : .all(kept)
    }

    /// Any of `conditions`, simplified: `never` dropped, `always` absorbing, nesting flattened.
    static func any(of conditions: [MatchCondition]) -> MatchCondition {
        var kept: [MatchCondition] = []
        for condition in conditions {
            switch condition {
            case .always: return .always
            case .never: continue
            case .any(let inner): kept += inner
            default: if !kept.contains(condition) { kept.append(condition) }
            }
        }
        return kept.isEmpty ? .never : kept.count == 1 ? kept[0] : .any(kept)
    }
}

/// Reads a ``MatchCondition`` off a pattern's nodes (see ``PatternSyntaxReader``).
enum ConditionAnalysis {
    /// Literal runs shorter than this say too little to be worth a search.
    static let shortestLiteral = 2
    /// Class runs shorter than this are found in nearly every URL.
    static let shortestRun = 3
    /// A class with more members than this (of 128) matches nearly anything.
    static let widestRunClass = 96
    /// At most this many bytes are checked at a start or an end.
    static let longestAnchoredCheck = 32
    /// A pattern of fixed characters is answered exactly up to this many.
    static let longestFixedSequence = 96

    /// What every match of a pattern made of `alternatives` (as read from its syntax) needs.
    static func condition(ofAlternatives alternatives: [[PatternNode]], caseless: Bool, atTop: Bool)
        -> MatchCondition
    {
        .any(of: alternatives.map { condition(ofSequence: $0, caseless: caseless, atTop: atTop) })
    }

    /// What every match of a sequence of nodes needs. `atTop`: the sequence is one of the
    /// pattern's own alternatives, so `^` at its start and `$` at its end anchor it to the subject.
    static func condition(ofSequence sequence: [PatternNode], caseless: Bool, atTop: Bool) -> MatchCondition {
        let nodes = PatternNode.flatten(sequence)
        var parts: [MatchCondition] = []
        if atTop, nodes.first == .start {
            let sets = anchoredSets(Array(nodes.dropFirst()), caseless: caseless, backwards: false)
            if !sets.isEmpty { parts.append(.startsWith(sets)) }
        }
        if atTop, nodes.last == .end {
            let sets = anchoredSets(nodes.dropLast().reversed(), caseless: caseless, backwards: true)
            if !sets.isEmpty { parts.append(.endsWith(sets.reversed())) }
        }
        var literal: [UInt8] = []
        var runSet = ASCIISet()
        var runMinimum = 0
        func endLiteral() {
            if literal.count >= shortestLiteral { parts.append(.contains(literal)) }
            literal = []
        }
        func endRun() {
            if runMinimum >= shortestRun, runSet.count <= widestRunClass {
                parts.append(.run(runSet, minimum: runMinimum))
            }
            runSet = ASCIISet()
            runMinimum = 0
        }
        var skipUntil = 0
        for (position, node) in nodes.enumerated() where position >= skipUntil {
            switch node {
            case .literal(let byte):
                endRun()
                literal.append(lowercased(byte))
            case .character(let byteClass):
                endLiteral()
                guard !byteClass.ascii.isEmpty else { return .never }
                runSet.formUnion(byteClass.ascii)
                runMinimum += 1
            case .repeated(let inner, let minimum, _):
                if let set = singleCharacterSet(inner, caseless: caseless) {
                    endLiteral()
                    if set.isEmpty {
                        if minimum > 0 { return .never }
                        continue
                    }
                    runSet.formUnion(set)
                    runMinimum += minimum
                    continue
                }
                endLiteral()
                endRun()
                if minimum > 0 { parts.append(condition(ofSequence: [inner], caseless: caseless, atTop: false)) }
            case .group(let alternatives):
                // Literal alternatives between literal text: `\.(club|co)\/` needs `.club/` or
                // `.co/`, rarer than `co` alone.
                if let words = literalAlternatives(alternatives) {
                    let after = nodes[(position + 1)...].prefix { if case .literal = $0 { true } else { false } }
                    let suffix = after.compactMap { if case .literal(let byte) = $0 { lowercased(byte) } else { nil } }
                    let combined = words.map { literal + $0.word + ($0.endsSubject ? [] : suffix) }
                    if combined.allSatisfy({ $0.count >= shortestLiteral }) {
                        literal = []
                        endRun()
                        parts.append(.any(of: combined.map(MatchCondition.contains)))
                        skipUntil = position + 1 + after.count
                        continue
                    }
                }
                endLiteral()
                endRun()
                parts.append(condition(ofAlternatives: alternatives, caseless: caseless, atTop: false))
            case .start, .end, .zeroWidth, .negativeLookahead, .authority, .backReference:
                endLiteral()
                endRun()
            }
        }
        endLiteral()
        endRun()
        return .all(of: parts)
    }

    /// The sets one byte each of the subject must be in, in turn, for `nodes` to match: nil unless
    /// every node is one character, or a character repeated a fixed number of times.
    /// Each set is exactly what its character matches among printable ASCII bytes.
    static func fixedSequence(_ nodes: [PatternNode], caseless: Bool) -> [ASCIISet]? {
        var sets: [ASCIISet] = []
        for node in nodes {
            switch node {
            case .repeated(let inner, let minimum, let maximum) where minimum == maximum:
                guard let set = singleCharacterSet(inner, caseless: caseless, exactOnly: true) else { return nil }
                sets += repeatElement(set, count: minimum)
            default:
                guard let set = singleCharacterSet(node, caseless: caseless, exactOnly: true) else { return nil }
                sets.append(set)
            }
            guard sets.count <= longestFixedSequence else { return nil }
        }
        return sets.isEmpty ? nil : sets
    }

    /// Most alternatives a group may have to be read as literal words.
    static let mostLiteralAlternatives = 64

    /// The alternatives of a group as lower-case words, when each is literal text only, perhaps
    /// followed by `$` (`endsSubject`: no text can follow it).
    private static func literalAlternatives(_ alternatives: [[PatternNode]]) -> [(
        word: [UInt8], endsSubject: Bool
    )]? {
        guard alternatives.count > 1, alternatives.count <= mostLiteralAlternatives else { return nil }
        var words: [(word: [UInt8], endsSubject: Bool)] = []
        for alternative in alternatives {
            var nodes = PatternNode.flatten(alternative)
            let endsSubject = nodes.last == .end
            if endsSubject { nodes.removeLast() }
            var word: [UInt8] = []
            for node in nodes {
                guard case .literal(let byte) = node else { return nil }
                word.append(lowercased(byte))
            }
            words.append((word, endsSubject))
        }
        return words
    }

    /// The ASCII bytes one node matches when it is a single character (a literal, a class, or a
    /// group of one such), else nil.
    /// `exactOnly`: nil for a class whose set is a superset (see ``ByteClass/isExact``).
    static func singleCharacterSet(_ node: PatternNode, caseless: Bool, exactOnly: Bool = false) -> ASCIISet? {
        switch node {
        case .literal(let byte): return literalSet(byte, caseless: caseless)
        case .character(let byteClass): return !exactOnly || byteClass.isExact ? byteClass.ascii : nil
        case .group(let alternatives) where alternatives.count == 1 && alternatives[0].count == 1:
            return singleCharacterSet(alternatives[0][0], caseless: caseless, exactOnly: exactOnly)
        default: return nil
        }
    }

    /// The sets the subject's bytes must be in, in turn, for `nodes` to match from their first
    /// (`backwards`: `nodes` is a sequence read from its end, and the groups inside it are read so
    /// too): one per character while each node is one character or one repeated a fixed number
    /// of times, then one for the byte after, the union of those the rest can start with
    /// (`(?:\?v=\d+)?$` ends the subject with a digit either way). Zero-width nodes are stepped
    /// over.
    private static func anchoredSets(_ nodes: [PatternNode], caseless: Bool, backwards: Bool) -> [ASCIISet] {
        var sets: [ASCIISet] = []
        var rest = nodes[...]
        while let node = rest.first, sets.count < longestAnchoredCheck {
            switch node {
            case .zeroWidth, .negativeLookahead, .authority:
                rest = rest.dropFirst()
                continue
            case .repeated(let inner, let minimum, let maximum):
                guard let set = singleCharacterSet(inner, caseless: caseless) else { break }
                sets += repeatElement(set, count: min(minimum, longestAnchoredCheck - sets.count))
                rest = rest.dropFirst()
                guard maximum != minimum else { continue }
                // What the repetition may still take comes first in what follows.
                rest = [.repeated(inner, min: 0, max: maximum.map { $0 - minimum })] + rest
            default:
                guard let set = singleCharacterSet(node, caseless: caseless) else { break }
                sets.append(set)
                rest = rest.dropFirst()
                continue
            }
            break
        }
        if sets.count < longestAnchoredCheck, !rest.isEmpty,
            let next = leadingBytes(Array(rest), caseless: caseless, backwards: backwards), !next.isNullable
        {
            sets.append(next.set)
        }
        return sets
    }

    /// The bytes a match of `nodes` can start with, among printable ASCII, and whether it can be
    /// empty (`set` then holds only those of its non-empty matches); nil when a node's bytes are
    /// not known (`^`, `$`, a back-reference, the host opening, a group repeated more than once).
    /// `backwards`: `nodes` is a sequence read from its end, and the groups inside it are read so
    /// too.
    private static func leadingBytes(_ nodes: [PatternNode], caseless: Bool, backwards: Bool) -> (
        set: ASCIISet, isNullable: Bool
    )? {
        var set = ASCIISet()
        for node in nodes {
            switch node {
            case .zeroWidth, .negativeLookahead: continue
            case .start, .end, .backReference, .authority: return nil
            case .literal, .character:
                guard let own = singleCharacterSet(node, caseless: caseless) else { return nil }
                set.formUnion(own)
                return (set, false)
            case .repeated(let inner, let minimum, let maximum):
                // A group repeated more than once is not looked into: where its backtracking can
                // grow exponentially (`(a+)+$`), PCRE2 fails the match past its limit, and the
                // verdict names that failure, which ruling the rule out here would hide.
                guard singleCharacterSet(inner, caseless: caseless) != nil || (maximum ?? 2) <= 1,
                    let (own, isNullable) = leadingBytes([inner], caseless: caseless, backwards: backwards)
                else { return nil }
                set.formUnion(own)
                if minimum > 0, !isNullable { return (set, false) }
            case .group(let alternatives):
                var isNullable = false
                for alternative in alternatives {
                    guard
                        let (own, canBeEmpty) = leadingBytes(
                            backwards ? alternative.reversed() : alternative, caseless: caseless, backwards: backwards)
                    else { return nil }
                    set.formUnion(own)
                    isNullable = isNullable || canBeEmpty
                }
                if !isNullable { return (set, false) }
            }
        }
        return (set, true)
    }

    private static func literalSet(_ byte: UInt8, caseless: Bool) -> ASCIISet {
        var set = ASCIISet(byte)
        if caseless { set.addOtherCases() }
        return set
    }

    static func lowercased(_ byte: UInt8) -> UInt8 { byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte }
}
