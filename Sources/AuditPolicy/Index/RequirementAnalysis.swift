/// Works out, conservatively, which tokens a subject must hold for a pattern to match.
///
/// The analysis only ever claims what every match implies: a literal run that every match
/// contains, with a token boundary on a side when every character that can stand there is not an
/// ASCII letter or digit (or is the start or end of the subject). When in doubt it claims less, and
/// a pattern it can say nothing useful about gets no requirement at all.
enum RequirementAnalysis {
    /// Requirements costlier than this are not worth an index entry; the rule runs every time.
    static let uselessCost = 0.95

    /// What the index files a rule under: the cheapest requirement of its pattern and, when the
    /// pattern also needs other whole tokens, up to two of them (the cheapest), checked before PCRE2
    /// runs.
    struct Filing: Equatable, Sendable {
        let requirement: Requirement
        let confirmations: [IndexKey]
    }

    /// The cheapest requirement found for `pattern`, or nil when there is none worth using.
    ///
    /// `cost` prices a key (by default ``IndexKey/cost``); the index raises the price of keys many
    /// rules already use, so that rules spread over keys. A pattern of a common shape (see
    /// ``LiteralShape``) is filed without reading its syntax; `readsShapes: false` reads it anyway,
    /// for tests that compare the two.
    static func filing(
        of pattern: String, caseInsensitive: Bool, cost: (IndexKey) -> Double = \.cost, readsShapes: Bool = true
    ) -> Filing? {
        withoutActuallyEscaping(cost) { cost -> Filing? in
            let analysis = Analysis(cost: cost)
            if readsShapes, let shape = LiteralShape(pattern, caseless: caseInsensitive) {
                let keys = keys(
                    in: shape.run, leftBounded: shape.isLeftBounded, rightBounded: shape.isRightBounded,
                    authorityLength: shape.startsInAuthority ? authorityLength(of: shape.run) : 0)
                return analysis.filing(options: keys.map(Requirement.key))
            }
            var reader = PatternSyntaxReader(pattern, caseless: caseInsensitive)
            guard let alternatives = reader.read() else { return nil }
            guard alternatives.count == 1 else {
                // Each alternative's key is chosen by price; when their costs add up past the
                // threshold, keys chosen by cost alone may still be worth an entry.
                for chooser in [analysis, Analysis(cost: \.cost)] {
                    let requirement = chooser.requirement(ofAlternatives: alternatives, before: true, after: true)
                    if let requirement, requirement.cost < uselessCost {
                        return Filing(requirement: requirement, confirmations: [])
                    }
                }
                return nil
            }
            return analysis.filing(options: analysis.options(ofSequence: alternatives[0], before: true, after: true))
        }
    }

    /// The requirements of a pattern's single alternative, as a pattern's syntax gives them
    /// (`nil`: the pattern has several alternatives or cannot be read). Used to learn the edges of
    /// ``LiteralShape``s.
    fileprivate static func options(of pattern: String, caseless: Bool) -> [Requirement]? {
        var reader = PatternSyntaxReader(pattern, caseless: caseless)
        guard let alternatives = reader.read(), alternatives.count == 1 else { return nil }
        return Analysis(cost: \.cost).options(ofSequence: alternatives[0], before: true, after: true)
    }

    private struct Analysis {
        let cost: (IndexKey) -> Double

        /// The cheapest of a sequence's `options` as its requirement, and up to two other whole
        /// tokens among them as confirmations; nil when none is worth an index entry.
        func filing(options: [Requirement]) -> Filing? {
            // Each option priced once (a price looks keys up in the index's counts), then ordered by
            // price, ties kept in the order found.
            let options = options.enumerated().map { (price: price($0.element), order: $0.offset, option: $0.element) }
                .sorted { ($0.price, $0.order) < ($1.price, $1.order) }.map(\.option)
            // The cheapest by price, unless its cost is past the threshold: then the cheapest by cost.
            guard let first = options.first,
                let requirement = first.cost < uselessCost ? first : options.min(by: { $0.cost < $1.cost }),
                requirement.cost < uselessCost
            else { return nil }
            var confirmations: [IndexKey] = []
            for option in options.dropFirst() where confirmations.count < 2 && option != requirement {
                guard case .key(let key) = option, key.kind == .token, !confirmations.contains(key) else { continue }
                confirmations.append(key)
            }
            return Filing(requirement: requirement, confirmations: confirmations)
        }

        func price(_ requirement: Requirement) -> Double {
            switch requirement {
            case .key(let key): cost(key)
            case .anyOf(let requirements): requirements.reduce(0) { $0 + price($1) }
            }
        }

        /// One requirement per alternative, all needed; nil when any alternative has none.
        /// `before` and `after`: whether the characters around the group may be letters or digits.
        func requirement(ofAlternatives alternatives: [[PatternNode]], before: Bool, after: Bool)
            -> Requirement?
        {
            var each: [Requirement] = []
            for alternative in alternatives {
                guard let requirement = requirement(ofSequence: alternative, before: before, after: after) else {
                    return nil
                }
                each.append(requirement)
            }
            return each.count == 1 ? each[0] : .anyOf(each)
        }

        /// The cheapest single requirement of a sequence, every part of which every match goes through.
        func requirement(ofSequence sequence: [PatternNode], before: Bool, after: Bool)
            -> Requirement?
        {
            options(ofSequence: sequence, before: before, after: after).min { price($0) < price($1) }
        }

        /// Every requirement a sequence has; a match meets all of them.
        func options(ofSequence sequence: [PatternNode], before: Bool, after: Bool) -> [Requirement] {
            let nodes = PatternNode.flatten(sequence)
            var options: [Requirement] = []
            var index = 0
            while index < nodes.count {
                if case .literal = nodes[index] {
                    var end = index
                    var run: [UInt8] = []
                    while end < nodes.count, case .literal(let byte) = nodes[end] {
                        run.append(byte)
                        end += 1
                    }
                    let leftBounded = !RequirementAnalysis.mayBeAlnum(before: index, in: nodes, outside: before)
                    let rightBounded = !RequirementAnalysis.mayBeAlnum(after: end, in: nodes, outside: after)
                    let isInAuthority = index > 0 && nodes[index - 1] == .authority
                    options += RequirementAnalysis.keys(
                        in: run, leftBounded: leftBounded, rightBounded: rightBounded,
                        authorityLength: isInAuthority ? RequirementAnalysis.authorityLength(of: run) : 0
                    ).map(Requirement.key)
                    index = end
                    continue
                }
                switch nodes[index] {
                case .group(let alternatives):
                    let left = RequirementAnalysis.mayBeAlnum(before: index, in: nodes, outside: before)
                    let right = RequirementAnalysis.mayBeAlnum(after: index + 1, in: nodes, outside: after)
                    if let requirement = requirement(ofAlternatives: alternatives, before: left, after: right) {
                        options.append(requirement)
                    }
                case .repeated(let node, let min, _) where min >= 1:
                    // Repetitions: the inside is needed, but its neighbours can be copies of itself.
                    if let requirement = requirement(ofSequence: [node], before: true, after: true) {
                        options.append(requirement)
                    }
                default: break
                }
                index += 1
            }
            return options
        }
    }

    /// Whether the character just before position `index` of `nodes` may be a letter or digit.
    fileprivate static func mayBeAlnum(before index: Int, in nodes: [PatternNode], outside: Bool) -> Bool {
        var position = index - 1
        while position >= 0 {
            let edge = lastEdge(of: nodes[position])
            if edge.mayBeAlnum { return true }
            if !edge.isNullable { return false }
            position -= 1
        }
        return outside
    }

    /// Whether the character just after position `index - 1` of `nodes` may be a letter or digit.
    fileprivate static func mayBeAlnum(after index: Int, in nodes: [PatternNode], outside: Bool) -> Bool {
        var position = index
        while position < nodes.count {
            let edge = firstEdge(of: nodes[position])
            if edge.mayBeAlnum { return true }
            if !edge.isNullable { return false }
            position += 1
        }
        return outside
    }

    /// What a node can end with: whether its last character may be a letter or digit, and whether
    /// it can match nothing at all (so the character before it counts too).
    private static func lastEdge(of node: PatternNode) -> (mayBeAlnum: Bool, isNullable: Bool) {
        switch node {
        case .literal(let byte): (PatternSyntaxReader.isAlnum(byte), false)
        case .character(let byteClass): (byteClass.mayBeAlnum, false)
        case .start: (false, false)  // nothing precedes the start of the subject
        case .end, .zeroWidth, .negativeLookahead, .authority: (false, true)
        case .backReference: (true, true)
        case .group(let alternatives): combine(alternatives.map { sequenceEdge($0, fromEnd: true) })
        case .repeated(let inner, let min, _):
            { (edge: (mayBeAlnum: Bool, isNullable: Bool)) in (edge.mayBeAlnum, edge.isNullable || min == 0) }(
                lastEdge(of: inner))
        }
    }

    private static func firstEdge(of node: PatternNode) -> (mayBeAlnum: Bool, isNullable: Bool) {
        switch node {
        case .literal(let byte): (PatternSyntaxReader.isAlnum(byte), false)
        case .character(let byteClass): (byteClass.mayBeAlnum, false)
        case .end: (false, false)  // only a final newline can follow
        case .start, .zeroWidth, .negativeLookahead, .authority: (false, true)
        case .backReference: (true, true)
        case .group(let alternatives): combine(alternatives.map { sequenceEdge($0, fromEnd: false) })
        case .repeated(let inner, let min, _):
            { (edge: (mayBeAlnum: Bool, isNullable: Bool)) in (edge.mayBeAlnum, edge.isNullable || min == 0) }(
                firstEdge(of: inner))
        }
    }

    private static func sequenceEdge(_ nodes: [PatternNode], fromEnd: Bool) -> (mayBeAlnum: Bool, isNullable: Bool) {
        var mayBeAlnum = false
        for node in fromEnd ? nodes.reversed() : nodes {
            let edge = fromEnd ? lastEdge(of: node) : firstEdge(of: node)
            mayBeAlnum = mayBeAlnum || edge.mayBeAlnum
            if !edge.isNullable { return (mayBeAlnum, false) }
        }
        return (mayBeAlnum, true)
    }

    private static func combine(_ edges: [(mayBeAlnum: Bool, isNullable: Bool)]) -> (mayBeAlnum: Bool, isNullable: Bool)
    {
        (edges.contains { $0.mayBeAlnum }, edges.contains { $0.isNullable })
    }

    /// How many of a run's first characters are in the URL's authority, when the run starts there:
    /// those before its first `/`, `?` or `#`.
    static func authorityLength(of run: [UInt8]) -> Int {
        run.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? run.count
    }

    /// The keys a literal run guarantees: one per letter-and-digit segment of the run, then one
    /// per two neighbouring segments that are both whole tokens (the run holds both, with only
    /// separators between them, so every match has them as neighbouring tokens).
    ///
    /// Whole tokens and pairs within the run's first `authorityLength` characters, which every
    /// match finds in the URL's authority, are keys ``IndexKey/isInAuthority``.
    static func keys(in run: [UInt8], leftBounded: Bool, rightBounded: Bool, authorityLength: Int = 0) -> [IndexKey] {
        let lowered = run.map { PatternSyntaxReader.isLetter($0) ? $0 | 0x20 : $0 }
        var keys: [IndexKey] = []
        var pairs: [IndexKey] = []
        var previousWholeToken: [UInt8]?
        var start = 0
        while start < lowered.count {
            guard PatternSyntaxReader.isAlnum(lowered[start]) else {
                start += 1
                continue
            }
            var end = start
            while end < lowered.count, PatternSyntaxReader.isAlnum(lowered[end]) { end += 1 }
            let segment = Array(lowered[start..<end])
            let startsToken = start > 0 || leftBounded
            let endsToken = end < lowered.count || rightBounded
            let isInAuthority = end <= authorityLength
            if startsToken, endsToken, let previous = previousWholeToken {
                pairs.append(IndexKey.pair(previous, segment, isInAuthority: isInAuthority))
            }
            previousWholeToken = startsToken && endsToken ? segment : nil
            switch (startsToken, endsToken) {
            case (true, true):
                keys.append(
                    IndexKey(
                        kind: .token, text: segment, isInAuthority: isInAuthority,
                        before: start > 0 ? lowered[start - 1] : 0, after: end < lowered.count ? lowered[end] : 0))
            case (true, false):
                keys.append(IndexKey(kind: .tokenPrefix, text: Array(segment.prefix(IndexKey.maximumAffixLength))))
            case (false, true):
                keys.append(IndexKey(kind: .tokenSuffix, text: Array(segment.suffix(IndexKey.maximumAffixLength))))
            case (false, false):
                keys.append(IndexKey(kind: .infix, text: rarestInfix(of: segment)))
            }
            start = end
        }
        return keys + pairs
    }

    /// The infix window of a long segment least likely to occur by chance: the one with the most
    /// digits and uncommon letters.
    private static func rarestInfix(of segment: [UInt8]) -> [UInt8] {
        let length = IndexKey.maximumInfixLength
        guard segment.count > length else { return segment }
        let common = Set("etaoinsrhlcdu".utf8)
        var best = 0
        var bestScore = -1
        for offset in 0...(segment.count - length) {
            let score = segment[offset..<offset + length].filter { !common.contains($0) }.count
            if score > bestScore {
                best = offset
                bestScore = score
            }
        }
        return Array(segment[best..<best + length])
    }
}

/// A pattern made of a known opening, one run of literal characters and a known ending, such as
/// the host rules that ad-block converters write (`^[a-z][a-z0-9+.-]*:/+(?:[^/?#]*\.)?` + an
/// escaped host name + `(?:[^a-z0-9_.%-]|$)`: 90 % of EasyList's rules).
///
/// Its requirements are the keys of the run, and whether the run's ends are token boundaries
/// depends only on the opening and ending. That is learned once per opening, ending and case
/// option, by the full analysis of the same shape around the runs `q` and `\-`: only when the
/// opening and ending give no requirements of their own and `q` comes out a single key is the
/// shape used. Filing such a rule then skips reading its syntax, which was most of the cost of
/// loading a large policy.
struct LiteralShape {
    /// The literal characters, unescaped.
    let run: [UInt8]
    /// Whether a token boundary is certain before the run.
    let isLeftBounded: Bool
    /// Whether a token boundary is certain after the run.
    let isRightBounded: Bool
    /// Whether the opening ends in the URL's authority (see ``PatternNode/authority``).
    let startsInAuthority: Bool

    private static let openings = [#"^[a-z][a-z0-9+.-]*:/+(?:[^/?#]*\.)?"#, "^", ""].map { Array($0.utf8) }
    private static let endings = ["(?:[^a-z0-9_.%-]|$)", "$", ""].map { Array($0.utf8) }

    /// The edges (left bounded, right bounded, run starts in the authority) learned for each
    /// opening, ending and case option, indexed by `edgeIndex`; nil where the shape is not used.
    private static let edges: [(Bool, Bool, Bool)?] = openings.indices.flatMap { opening in
        endings.indices.flatMap { ending in
            [false, true].map { caseless in learnEdges(opening: opening, ending: ending, caseless: caseless) }
        }
    }

    private static func edgeIndex(opening: Int, ending: Int, caseless: Bool) -> Int {
        (opening * endings.count + ending) * 2 + (caseless ? 1 : 0)
    }

    private static func learnEdges(opening: Int, ending: Int, caseless: Bool) -> (Bool, Bool, Bool)? {
        let open = String(decoding: openings[opening], as: UTF8.self)
        let end = String(decoding: endings[ending], as: UTF8.self)
        guard RequirementAnalysis.options(of: open + #"\-"# + end, caseless: caseless) == [],
            let probe = RequirementAnalysis.options(of: open + "q" + end, caseless: caseless),
            probe.count == 1, case .key(let key) = probe[0], key.text == Array("q".utf8)
        else { return nil }
        // A whole token at the start of the run shows whether the run starts in the authority.
        let inAuthority = RequirementAnalysis.options(of: open + #"q\.q"# + end, caseless: caseless)?.contains {
            $0.keys.contains(where: \.isInAuthority)
        }
        switch key.kind {
        case .token: return (true, true, inAuthority ?? false)
        case .tokenPrefix: return (true, false, inAuthority ?? false)
        case .tokenSuffix: return (false, true, inAuthority ?? false)
        case .infix: return (false, false, inAuthority ?? false)
        case .tokenPair: return nil
        }
    }

    /// The shape of `pattern`, or nil when it is not one opening, a run and one ending.
    init?(_ pattern: String, caseless: Bool) {
        let bytes = Array(pattern.utf8)
        let found: ([UInt8], Int)? = {
            for (opening, prefix) in Self.openings.enumerated() where bytes.starts(with: prefix) {
                for (ending, suffix) in Self.endings.enumerated()
                where bytes.count > prefix.count + suffix.count
                    && bytes[(bytes.count - suffix.count)...].elementsEqual(suffix)
                {
                    let run = Self.unescapedRun(bytes[prefix.count..<(bytes.count - suffix.count)])
                    if let run { return (run, Self.edgeIndex(opening: opening, ending: ending, caseless: caseless)) }
                }
            }
            return nil
        }()
        guard let found, let edges = Self.edges[found.1] else { return nil }
        (run, isLeftBounded, isRightBounded, startsInAuthority) = (found.0, edges.0, edges.1, edges.2)
    }

    /// The characters of `text` when every one is literal: letters, digits, `_ - / : % = & , ; ~ @ !`,
    /// or a backslash and punctuation; nil otherwise.
    private static func unescapedRun(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        var run: [UInt8] = []
        run.reserveCapacity(text.count)
        var index = text.startIndex
        while index < text.endIndex {
            let byte = text[index]
            if byte == UInt8(ascii: "\\") {
                index += 1
                guard index < text.endIndex, text[index] > 0x20, text[index] < 0x7F,
                    !PatternSyntaxReader.isAlnum(text[index])
                else { return nil }
                run.append(text[index])
            } else {
                guard PatternSyntaxReader.isAlnum(byte) || Self.plainPunctuation.contains(byte) else { return nil }
                run.append(byte)
            }
            index += 1
        }
        return run
    }

    private static let plainPunctuation = Set("_-/:%=&,;~@!".utf8)
}
