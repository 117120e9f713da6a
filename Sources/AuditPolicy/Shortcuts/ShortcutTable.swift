/// The ``RuleShortcut``s of a policy's rules, and what an evaluation needs to answer them: the
/// literals of each field's shortcuts, searched for at once.
///
/// Shortcuts answer only for subjects made of printable ASCII (0x20–0x7E), as nearly every URL is:
/// there `.` matches any byte, `$` only the end, and no character from outside ASCII folds onto a
/// letter (U+212A KELVIN SIGN onto `k`, U+017F LONG S onto `s`). Any other subject is left to
/// PCRE2. The answers are those PCRE2 gives; the differential tests compare the two.
///
/// The conditions are compiled into one flat array of operations, each subtree followed by its
/// children, so that answering reads arrays and moves no reference counts.
struct ShortcutTable: Sendable {
    /// Bit `n`: rule `n` has a shortcut.
    private let ruleBits: [UInt64]
    /// For each word of ``ruleBits``, the number of rules with a shortcut before it.
    private let ranks: [Int32]
    /// For a policy of at most ``directSlotRules`` rules, each rule's shortcut number (-1: none):
    /// one load, where the bits and their ranks take two and a popcount (a software one on
    /// baseline x86-64). Empty for larger policies, whose table would not stay in the cache.
    private let directSlots: [Int32]
    private let program: ShortcutProgram
    /// Whether some rule has a shortcut.
    private let hasRules: Bool

    /// Policies of at most this many rules find a rule's shortcut in ``directSlots`` (16 KiB).
    static let directSlotRules = 4_096

    /// Number of rules with a shortcut.
    var count: Int { program.rules.count }

    /// The table of `shortcuts` (rule index → shortcut and the rule's field) of a policy of
    /// `ruleCount` rules.
    init(shortcuts byRule: [Int32: (shortcut: RuleShortcut, field: RequestField)], ruleCount: Int) {
        var bits = [UInt64](repeating: 0, count: (ruleCount + 63) / 64)
        for rule in byRule.keys { bits[Int(rule) >> 6] |= 1 << UInt64(rule & 63) }
        var ranks: [Int32] = []
        ranks.reserveCapacity(bits.count)
        var total: Int32 = 0
        for word in bits {
            ranks.append(total)
            total += Int32(word.nonzeroBitCount)
        }
        ruleBits = bits
        hasRules = !byRule.isEmpty
        self.ranks = ranks
        let sortedRules = byRule.keys.sorted()
        var directSlots = [Int32](repeating: -1, count: ruleCount <= Self.directSlotRules ? ruleCount : 0)
        if !directSlots.isEmpty {
            for (slot, rule) in sortedRules.enumerated() { directSlots[Int(rule)] = Int32(slot) }
        }
        self.directSlots = directSlots
        program = ShortcutProgram(sortedRules.compactMap { byRule[$0] })
    }

    /// Whether rule `index` has a shortcut.
    @inline(__always)
    func covers(_ index: Int32) -> Bool {
        let word = Int(index >> 6)
        return word < ruleBits.count && ruleBits[word] >> UInt64(index & 63) & 1 != 0
    }

    /// Answers the shortcuts of `candidates` (rule indices) for `request`: drops the rules that
    /// cannot match, and marks with ``CandidateList/matchesForSure`` those that match whatever
    /// their method; the others are left for PCRE2. Each field's subject is read once.
    @inline(__always)
    func answer(_ candidates: inout CandidateList, for request: AuditRequest, subjects: inout RequestSubjects) {
        // Most decisions have no candidate, and many policies no shortcut: no call then.
        guard !candidates.isEmpty, hasRules else { return }
        answerCovered(&candidates, for: request, subjects: &subjects)
    }

    /// ``answer(_:for:subjects:)`` for a list of candidates and a table with rules.
    private func answerCovered(
        _ candidates: inout CandidateList, for request: AuditRequest, subjects: inout RequestSubjects
    ) {
        guard candidates.contains(where: covers) else { return }
        for (fieldSlot, field) in program.fields.enumerated() {
            guard let subject = subjects.subject(for: field.name, of: request) else { continue }
            subject.withSpan { bytes in
                guard bytes.isPrintableASCII else { return }
                var found = FoundLiterals(count: field.literals.count)
                field.literals.search(bytes, found: &found)
                let longestRun = program.readsRuns ? Self.longestAlphanumericRun(in: bytes) : 0
                candidates.compact { rule in
                    let slot = self.slot(of: rule)
                    guard slot >= 0, program.rules[slot].field == fieldSlot else { return rule }
                    switch program.answer(slot, bytes, found: found, longestRun: longestRun) {
                    case nil: return rule
                    case true?: return rule | CandidateList.matchesForSure
                    case false?: return nil
                    }
                }
            }
        }
    }

    /// The length of the longest run of ASCII letters and digits in `bytes`: its longest token.
    private static func longestAlphanumericRun(in bytes: Span<UInt8>) -> Int {
        var longest = 0
        var isASCII = true
        _ = TokenScanner.forEachToken(in: bytes, isASCII: &isASCII) { start, end in longest = max(longest, end - start)
        }
        return longest
    }

    /// The shortcut number of rule `index` (perhaps marked ``CandidateList/matchesForSure``, which
    /// has none), or -1 when it has none.
    @inline(__always)
    private func slot(of index: Int32) -> Int {
        if !directSlots.isEmpty { return index < directSlots.count ? Int(directSlots[Int(index)]) : -1 }
        guard covers(index) else { return -1 }
        let word = Int(index >> 6)
        let bit = UInt64(1) << UInt64(index & 63)
        return Int(ranks[word]) + (ruleBits[word] & (bit - 1)).nonzeroBitCount
    }
}

/// One operation of a compiled condition.
private struct ShortcutOperation {
    enum Kind: UInt8 {
        case always, never, literal, anyLiteral, run, startsWith, endsWith, containsSequence, all, any
    }
    let kind: Kind
    /// literal: its number; anyLiteral: its mask; run: its set; startsWith, endsWith,
    /// containsSequence: the first of its sets.
    let first: Int32
    /// run: the minimum length; startsWith, endsWith, containsSequence: the number of sets.
    let second: Int32
    /// containsSequence: the literal it must contain (-1: none known), and where in the sequence.
    var anchor: Int32 = -1
    var anchorOffset: Int32 = 0
    /// containsSequence without an anchor: a byte the sequence has at ``anchorOffset``, searched
    /// for with `memchr` (-1: none).
    var scanByte: Int16 = -1
    /// any: the mask of literals one of which occurs whenever a child holds; containsSequence: of
    /// the literal pieces of the sequence, which all occur whenever it does (-1: none known).
    var mask: Int32 = -1
    /// A literal that occurs in every subject this operation holds for (-1: none known).
    var witness: Int32 = -1
    /// run, startsWith, endsWith, containsSequence: how many letters and digits in a row every
    /// subject it holds for has (0: none known). A subject whose longest such run is shorter
    /// fails it without being read.
    var alphanumericRun: Int32 = 0
    /// The index just past this operation's subtree (its children follow it).
    var end: Int32
}

/// Every shortcut's conditions as one array of operations, with the byte sets they read and the
/// literal set of each field.
private final class ShortcutProgram: Sendable {
    struct Rule: Sendable {
        let field: Int
        let condition: Int32
        /// -1: none.
        let matchesUnless: Int32
        let isExactUnless: Bool
        let isExact: Bool
        /// The condition under which ``condition`` is not exact (see ``RuleShortcut/exactUnless``;
        /// -1: none).
        let exactUnless: Int32
        /// -1: none.
        let automaton: Int32
        /// Whether the automaton is the pattern's without its lookarounds (see
        /// ``RuleShortcut/isRelaxedAutomaton``), and the condition under which its matches are
        /// left to PCRE2 (-1: all of them).
        let isRelaxed: Bool
        let relaxedUnless: Int32
    }

    /// A field's literals, searched for at once in its subject.
    struct Field: Sendable {
        let name: RequestField
        let literals: LiteralSet
    }

    let rules: [Rule]
    let operations: [ShortcutOperation]
    let sets: [ASCIISet]
    let fields: [Field]
    let masks: [LiteralMask]
    let automata: [PositionAutomaton]
    /// Whether some operation needs a run of letters and digits (``ShortcutOperation/alphanumericRun``).
    let readsRuns: Bool

    init(_ shortcuts: [(shortcut: RuleShortcut, field: RequestField)]) {
        var compiler = Compiler()
        var rules: [Rule] = []
        var automata: [PositionAutomaton] = []
        for (shortcut, field) in shortcuts {
            let slot = compiler.slot(of: field)
            let condition = compiler.compile(shortcut.condition, field: slot)
            let unless = shortcut.matchesUnless.map { compiler.compile($0, field: slot) } ?? -1
            let relaxedUnless = shortcut.relaxedUnless.map { compiler.compile($0, field: slot) } ?? -1
            let exactUnless = shortcut.exactUnless.map { compiler.compile($0, field: slot) } ?? -1
            rules.append(
                Rule(
                    field: slot, condition: condition, matchesUnless: unless, isExactUnless: shortcut.isExactUnless,
                    isExact: shortcut.isExact, exactUnless: exactUnless,
                    automaton: shortcut.automaton == nil ? -1 : Int32(automata.count),
                    isRelaxed: shortcut.isRelaxedAutomaton, relaxedUnless: relaxedUnless))
            if let automaton = shortcut.automaton { automata.append(automaton) }
        }
        self.automata = automata
        self.rules = rules
        self.operations = compiler.operations
        readsRuns = compiler.operations.contains { $0.alphanumericRun > 0 }
        self.sets = compiler.sets
        self.masks = compiler.masks
        self.fields = compiler.fields.indices.map { slot in
            Field(
                name: compiler.fields[slot],
                literals: LiteralSet(compiler.literals[slot].sorted { $0.value < $1.value }.map(\.key)))
        }
    }

    /// Rule shortcut `slot`'s answer for a printable subject `bytes`, in which the literals of its
    /// field marked in `found` occur: true (matches), false (cannot match) or nil (PCRE2 decides).
    func answer(_ slot: Int, _ bytes: Span<UInt8>, found: borrowing FoundLiterals, longestRun: Int) -> Bool? {
        let rule = rules[slot]
        if rule.isExact { return holds(Int(rule.condition), bytes, found, longestRun) }
        if rule.matchesUnless >= 0 {
            if !holds(Int(rule.matchesUnless), bytes, found, longestRun) { return true }
            if rule.isExactUnless { return false }
        }
        guard holds(Int(rule.condition), bytes, found, longestRun) else { return false }
        if rule.exactUnless >= 0, !holds(Int(rule.exactUnless), bytes, found, longestRun) { return true }
        guard rule.automaton >= 0 else { return nil }
        let matches = automata[Int(rule.automaton)].matches(bytes)
        guard rule.isRelaxed, matches == true else { return matches }
        // The pattern without its lookarounds matches: so does the pattern, when they are
        // negative lookaheads whose texts the subject lacks.
        return rule.relaxedUnless >= 0 && !holds(Int(rule.relaxedUnless), bytes, found, longestRun) ? true : nil
    }

    /// Whether condition `index` holds for the subject `bytes`, in which the literals in `found`
    /// occur.
    private func holds(
        _ index: Int, _ bytes: Span<UInt8>, _ found: borrowing FoundLiterals, _ longestRun: Int
    ) -> Bool {
        let operation = operations[index]
        switch operation.kind {
        case .always: return true
        case .never: return false
        case .literal:
            return found.contains(Int(operation.first))
        case .anyLiteral:
            return found.intersects(masks[Int(operation.first)])
        case .run:
            guard operation.alphanumericRun <= longestRun else { return false }
            return hasRun(of: sets[Int(operation.first)], minimum: Int(operation.second), in: bytes)
        case .startsWith, .endsWith:
            guard operation.alphanumericRun <= longestRun else { return false }
            let count = Int(operation.second)
            guard bytes.count >= count else { return false }
            let start = operation.kind == .startsWith ? 0 : bytes.count - count
            let first = Int(operation.first)
            for offset in 0..<count where !sets[first + offset].contains(bytes[start + offset]) { return false }
            return true
        case .containsSequence:
            guard operation.alphanumericRun <= longestRun else { return false }
            let anchor = Int(operation.anchor)
            if anchor >= 0, !found.contains(anchor) { return false }
            if operation.mask >= 0, !found.containsAll(masks[Int(operation.mask)]) { return false }
            if operation.scanByte >= 0 {
                return containsSequence(
                    Int(operation.first), Int(operation.second), around: UInt8(operation.scanByte),
                    at: Int(operation.anchorOffset), in: bytes)
            }
            return containsSequence(
                Int(operation.first), Int(operation.second), from: Int(operation.anchorOffset), in: bytes)
        case .all, .any:
            let wanted = operation.kind == .any
            if operation.mask >= 0, !found.intersects(masks[Int(operation.mask)]) { return false }
            var child = index + 1
            while child < Int(operation.end) {
                let childOperation = operations[child]
                if childOperation.kind == .literal {
                    // A literal child is its own witness: answered here, without a call.
                    if found.contains(Int(childOperation.first)) == wanted { return wanted }
                    child = Int(childOperation.end)
                    continue
                }
                let witness = Int(childOperation.witness)
                // A child whose witness is missing does not hold, without reading it.
                if witness < 0 || found.contains(witness) {
                    if holds(child, bytes, found, longestRun) == wanted { return wanted }
                } else if !wanted {
                    return false
                }
                child = Int(childOperation.end)
            }
            return !wanted
        }
    }

    /// Whether some `count` bytes in a row are in `sets[first...]` in turn; each place is
    /// checked from the set at `offset` (the rarest, an anchor's first byte) on.
    private func containsSequence(_ first: Int, _ count: Int, from offset: Int, in bytes: Span<UInt8>) -> Bool {
        guard bytes.count >= count else { return false }
        placing: for start in 0...(bytes.count - count) {
            for index in offset..<count where !sets[first + index].contains(bytes[start + index]) {
                continue placing
            }
            for index in 0..<offset where !sets[first + index].contains(bytes[start + index]) { continue placing }
            return true
        }
        return false
    }

    /// ``containsSequence(_:_:from:in:)`` for a sequence whose set at `offset` is the one byte
    /// `byte`: only the places where `memchr` finds it are checked.
    private func containsSequence(
        _ first: Int, _ count: Int, around byte: UInt8, at offset: Int, in bytes: Span<UInt8>
    ) -> Bool {
        guard bytes.count >= count else { return false }
        var from = offset
        let end = bytes.count - count + offset + 1
        placing: while let position = bytes.firstIndex(of: byte, from: from, to: end) {
            from = position + 1
            let start = position - offset
            for index in 0..<count where !sets[first + index].contains(bytes[start + index]) { continue placing }
            return true
        }
        return false
    }

    /// Whether `minimum` bytes in a row are in `set`. Each window of `minimum` bytes is read from
    /// its end back, and a byte outside the set moves the window past it: a long run is found,
    /// or ruled out, in about one read per `minimum` bytes.
    private func hasRun(of set: ASCIISet, minimum: Int, in bytes: Span<UInt8>) -> Bool {
        var start = 0
        while start + minimum <= bytes.count {
            var position = start + minimum - 1
            while position >= start, set.contains(bytes[position]) { position -= 1 }
            if position < start { return true }
            start = position + 1
        }
        return false
    }

    /// Turns ``MatchCondition``s into operations, numbering each field's literals and classes.
    private struct Compiler {
        var fields: [RequestField] = []
        var literals: [[[UInt8]: Int]] = []
        var operations: [ShortcutOperation] = []
        var sets: [ASCIISet] = []
        var masks: [LiteralMask] = []

        mutating func slot(of field: RequestField) -> Int {
            if let slot = fields.firstIndex(of: field) { return slot }
            fields.append(field)
            literals.append([:])
            return fields.count - 1
        }

        /// Appends `condition`'s operations; returns the index of its first.
        mutating func compile(_ condition: MatchCondition, field: Int) -> Int32 {
            let condition = Self.literalized(condition)
            let index = operations.count
            func append(_ kind: ShortcutOperation.Kind, _ first: Int, _ second: Int = 0) {
                operations.append(
                    ShortcutOperation(
                        kind: kind, first: Int32(first), second: Int32(second), end: Int32(operations.count + 1)))
            }
            switch condition {
            case .always: append(.always, 0)
            case .never: append(.never, 0)
            case .contains(let literal):
                let number = literals[field][literal] ?? literals[field].count
                literals[field][literal] = number
                append(.literal, number)
            case .run(let set, let minimum):
                append(.run, sets.count, minimum)
                sets.append(set)
            case .containsSequence(let sequence) where sequence.count > 1 && sequence.allSatisfy({ $0 == sequence[0] }):
                // One set over and over: a run, which is found reading about one byte in `count`.
                append(.run, sets.count, sequence.count)
                sets.append(sequence[0])
            case .containsSequence(let sequence):
                append(.containsSequence, sets.count, sequence.count)
                sets += sequence
                let pieces = Self.literalPieces(of: sequence)
                if let (anchor, offset) = pieces.max(by: { Self.rarity($0.literal) < Self.rarity($1.literal) }) {
                    let numbers = pieces.map { piece in
                        let number = literals[field][piece.literal] ?? literals[field].count
                        literals[field][piece.literal] = number
                        return number
                    }
                    operations[index].anchor = Int32(literals[field][anchor] ?? 0)
                    operations[index].anchorOffset = Int32(offset)
                    if numbers.count > 1 {
                        operations[index].mask = Int32(masks.count)
                        masks.append(LiteralMask(numbers))
                    }
                } else if let narrowest = sequence.indices.min(by: { sequence[$0].count < sequence[$1].count }) {
                    operations[index].anchorOffset = Int32(narrowest)
                }
                // With or without an anchor found among the literals, the places to check are those
                // of the sequence's rarest single byte, found with memchr.
                if let (offset, byte) = Self.rarestSingleByte(of: sequence) {
                    operations[index].scanByte = Int16(byte)
                    operations[index].anchorOffset = Int32(offset)
                }
            case .startsWith(let anchored), .endsWith(let anchored):
                if case .startsWith = condition {
                    append(.startsWith, sets.count, anchored.count)
                } else {
                    append(.endsWith, sets.count, anchored.count)
                }
                sets += anchored
            case .any(let children) where children.allSatisfy({ if case .contains = $0 { true } else { false } }):
                // Literal alternatives: one test of the found literals against their mask.
                let numbers = children.map { child in
                    guard case .contains(let literal) = child else { preconditionFailure("a literal") }
                    let number = literals[field][literal] ?? literals[field].count
                    literals[field][literal] = number
                    return number
                }
                append(.anyLiteral, masks.count)
                masks.append(LiteralMask(numbers))
            case .all(let children), .any(let children):
                if case .all = condition { append(.all, 0) } else { append(.any, 0) }
                for child in Self.cheapestFirst(children) { _ = compile(child, field: field) }
                operations[index].end = Int32(operations.count)
                if case .any = condition, let witnesses = witnesses(ofChildrenOf: index) {
                    operations[index].mask = Int32(masks.count)
                    masks.append(LiteralMask(witnesses))
                }
            }
            if let witnesses = witnesses(of: index), witnesses.count == 1 {
                operations[index].witness = Int32(witnesses[0])
            }
            operations[index].alphanumericRun = Int32(Self.alphanumericRun(of: condition))
            return Int32(index)
        }

        /// Literals one of which occurs in every subject operation `index` holds for; nil when
        /// some subject it holds for may have none of them.
        private func witnesses(of index: Int) -> [Int]? {
            let operation = operations[index]
            switch operation.kind {
            case .literal: return [Int(operation.first)]
            case .anyLiteral: return masks[Int(operation.first)].numbers
            case .containsSequence: return operation.anchor >= 0 ? [Int(operation.anchor)] : nil
            case .any: return witnesses(ofChildrenOf: index)
            case .all:
                var child = index + 1
                while child < Int(operation.end) {
                    if let found = witnesses(of: child) { return found }
                    child = Int(operations[child].end)
                }
                return nil
            case .always, .never, .run, .startsWith, .endsWith: return nil
            }
        }

        /// The witnesses of every child of the `any` or `all` operation at `index`, together; nil
        /// when some child has none.
        private func witnesses(ofChildrenOf index: Int) -> [Int]? {
            var all: [Int] = []
            var child = index + 1
            while child < Int(operations[index].end) {
                guard let found = witnesses(of: child) else { return nil }
                all += found
                child = Int(operations[child].end)
            }
            return all
        }

        /// ASCII letters and digits.
        static let alphanumerics: ASCIISet = {
            var set = ASCIISet()
            set.insert(UInt8(ascii: "0")...UInt8(ascii: "9"))
            set.insert(UInt8(ascii: "a")...UInt8(ascii: "z"))
            set.insert(UInt8(ascii: "A")...UInt8(ascii: "Z"))
            return set
        }()

        /// How many letters and digits in a row every subject a run or sequence condition holds
        /// for has: its longest stretch of sets of letters and digits only; 0 for other conditions.
        static func alphanumericRun(of condition: MatchCondition) -> Int {
            let sequence: [ASCIISet]
            switch condition {
            case .run(let set, let minimum): sequence = Array(repeating: set, count: minimum)
            case .containsSequence(let sets), .startsWith(let sets), .endsWith(let sets): sequence = sets
            default: return 0
            }
            var longest = 0
            var current = 0
            for set in sequence {
                current = !set.isEmpty && alphanumerics.isSuperset(of: set) ? current + 1 : 0
                longest = max(longest, current)
            }
            return longest
        }

        /// Text that nearly every URL has, and so a poor anchor however long it is.
        static let commonURLText: Set<[UInt8]> = Set(
            [
                "http", "https", "://", "www", "com", ".com", "com/", "net", "org", "html", "php", "js", "css", "png",
                "jpg", "gif", "cdn", "static", "api", "img", "www.", "/wp-",
            ]
            .map { Array($0.utf8) })

        /// The place in `sequence` of a set of one byte, and that byte, choosing the byte least
        /// expected in URLs; nil when no set has one byte.
        static func rarestSingleByte(of sequence: [ASCIISet]) -> (offset: Int, byte: UInt8)? {
            func rank(_ byte: UInt8) -> Int {
                if (byte | 0x20) &- UInt8(ascii: "a") < 26 || byte &- UInt8(ascii: "0") < 10 { return 2 }
                return Array("/.-_=&%".utf8).contains(byte) ? 1 : 0
            }
            var best: (offset: Int, byte: UInt8)?
            for (offset, set) in sequence.enumerated() where set.count == 1 {
                guard let byte = (0..<128).first(where: { set.contains(UInt8($0)) }).map(UInt8.init) else { continue }
                if best.map({ rank(byte) < rank($0.byte) }) ?? true { best = (offset, byte) }
            }
            return best
        }

        /// How rarely a literal is expected in URLs: longer is rarer, except for common URL text.
        static func rarity(_ literal: [UInt8]) -> Int {
            commonURLText.contains(literal) ? 0 : literal.count
        }

        /// The literal texts of a sequence (runs of sets of one byte, or of one letter in both
        /// cases) of two bytes or more, lower-case, and where each starts.
        static func literalPieces(of sequence: [ASCIISet]) -> [(literal: [UInt8], offset: Int)] {
            func byte(_ set: ASCIISet) -> UInt8? {
                guard set.count <= 2, let first = (0..<128).first(where: { set.contains(UInt8($0)) }) else {
                    return nil
                }
                let lower = ConditionAnalysis.lowercased(UInt8(first))
                if set.count == 1 { return lower }
                var letter = ASCIISet(lower)
                letter.addOtherCases()
                return letter == set ? lower : nil
            }
            var pieces: [(literal: [UInt8], offset: Int)] = []
            var current: [UInt8] = []
            for (index, set) in sequence.enumerated() {
                if let byte = byte(set) { current.append(byte) }
                if byte(set) == nil || index == sequence.count - 1 {
                    if current.count >= 2 {
                        let end = byte(set) == nil ? index : index + 1
                        pieces.append((current, end - current.count))
                    }
                    current = []
                }
            }
            return pieces
        }

        /// `condition` with each sequence that spells a text in either case (`[Cc][Oo][Mm][/]`)
        /// made a literal: the literal search answers it exactly, with no pass over the subject,
        /// and literal alternatives are one test of their mask.
        private static func literalized(_ condition: MatchCondition) -> MatchCondition {
            switch condition {
            case .containsSequence(let sequence): caselessLiteral(sequence).map(MatchCondition.contains) ?? condition
            case .all(let children): .all(children.map(literalized))
            case .any(let children): .any(children.map(literalized))
            default: condition
            }
        }

        /// The text `sequence` spells, lower-cased, when it is two bytes or more and each set is a
        /// letter in either case or one other byte; nil otherwise.
        static func caselessLiteral(_ sequence: [ASCIISet]) -> [UInt8]? {
            guard sequence.count >= ConditionAnalysis.shortestLiteral else { return nil }
            var literal: [UInt8] = []
            for set in sequence {
                guard let first = (0..<128).first(where: { set.contains(UInt8($0)) }) else { return nil }
                let lower = ConditionAnalysis.lowercased(UInt8(first))
                var cases = ASCIISet(lower)
                cases.addOtherCases()
                guard set == cases else { return nil }
                literal.append(lower)
            }
            return literal
        }

        /// Anchored checks first (a few bytes), then literals (already searched), then the rest.
        private static func cheapestFirst(_ conditions: [MatchCondition]) -> [MatchCondition] {
            func rank(_ condition: MatchCondition) -> Int {
                switch condition {
                case .always, .never: 0
                case .startsWith, .endsWith: 1
                case .contains: 2
                case .run, .containsSequence: 3
                case .all, .any: 4
                }
            }
            return conditions.enumerated().sorted { (rank($0.element), $0.offset) < (rank($1.element), $1.offset) }
                .map(\.element)
        }
    }
}
