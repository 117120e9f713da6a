/// A deliberately small reading of PCRE2 pattern syntax, enough to find what a match must contain.
///
/// The reader understands literals, escapes, character classes, anchors, groups, lookarounds,
/// back-references and quantifiers. Anything else (verbs, callouts, conditionals, recursion, inline
/// options other than a leading `(?i)`, `\g`, `\k`, `\G`, `\C`, extended mode) makes it give up, and
/// the rule is then simply run for every request. Giving up is always safe; guessing never is.
indirect enum PatternNode: Equatable {
    /// One ASCII character matched literally (case folding is the caller's business).
    case literal(UInt8)
    /// One character from a set.
    case character(ByteClass)
    /// `^` or `\A`: nothing comes before this point.
    case start
    /// `$`, `\z` or `\Z`: nothing but a final newline comes after this point.
    case end
    /// Lookarounds other than a negative lookahead, `\b`, `\B`, `\K`: they consume nothing.
    case zeroWidth
    /// `(?!…)`: consumes nothing, and what follows cannot start with a match of the alternatives.
    case negativeLookahead([[PatternNode]])
    /// Consumes nothing; stands right after the ad-block host opening
    /// `^[a-z][a-z0-9+.-]*:/+(?:[^/?#]*\.)?`, which ends inside the URL's authority (after
    /// `scheme:/`, before the first `/`, `?` or `#`): literal characters right after it, up to the
    /// first `/`, `?` or `#` among them, are in the authority too.
    case authority
    /// A back-reference: any text, possibly empty.
    case backReference
    /// A group: one sequence of nodes per alternative.
    case group([[PatternNode]])
    /// A node repeated `min` to `max` times (`max` nil for unbounded).
    case repeated(PatternNode, min: Int, max: Int?)
}

extension PatternNode {
    /// `nodes` with each group of one alternative (and each `{1}` repetition) replaced by its
    /// inside, so that `(foo)bar` reads as one literal run `foobar`.
    static func flatten(_ nodes: [PatternNode]) -> [PatternNode] {
        var flat: [PatternNode] = []
        for node in nodes {
            switch node {
            case .group(let alternatives) where alternatives.count == 1: flat += flatten(alternatives[0])
            case .repeated(let inner, 1, 1): flat += flatten([inner])
            default: flat.append(node)
            }
        }
        return flat
    }
}

/// Reads a pattern into ``PatternNode`` alternatives, or nil when the pattern uses syntax the
/// reader does not model.
struct PatternSyntaxReader {
    private let bytes: [UInt8]
    private var position = 0
    /// Whether letters may match case-insensitively (the rule's option or a leading `(?i)`).
    private(set) var isCaseless: Bool
    /// Whether the pattern has a possessive quantifier (`a++`) or an atomic group (`(?>…)`),
    /// which the nodes do not tell from their backtracking forms: they match no more than those,
    /// but may match less.
    private(set) var hasAtomicParts = false
    /// The alternatives inside each lookahead `(?=…)` and lookbehind `(?<=…)`, `(?<!…)`, which
    /// the nodes leave out (``PatternNode/zeroWidth``): what PCRE2 tries at each place one stands.
    private(set) var lookaroundBodies: [[[PatternNode]]] = []

    init(_ pattern: String, caseless: Bool) {
        self.bytes = Array(pattern.utf8)
        self.isCaseless = caseless
    }

    private struct GiveUp: Error {}

    /// The top-level alternatives of the pattern, or nil when it cannot be modelled.
    mutating func read() -> [[PatternNode]]? {
        if bytes.starts(with: Array("(?i)".utf8)) {
            isCaseless = true
            position = 4
        }
        do {
            var opening: [PatternNode] = []
            let afterOpening = position + Self.hostOpening.count
            // (A quantifier right after it would change the opening's last group.)
            if bytes[position...].starts(with: Self.hostOpening),
                afterOpening == bytes.count || !"?*+{".utf8.contains(bytes[afterOpening])
            {
                var reader = PatternSyntaxReader(
                    String(decoding: Self.hostOpening, as: UTF8.self), caseless: isCaseless)
                opening = try reader.readAlternatives()[0] + [.authority]
                position = afterOpening
            }
            let alternatives = try readAlternatives(first: opening)
            return position == bytes.count ? alternatives : nil
        } catch {
            return nil
        }
    }

    /// How ad-block converters open a host rule (`||host`): a scheme, slashes, then any labels of
    /// the host before the one named.
    static let hostOpening = Array(#"^[a-z][a-z0-9+.-]*:/+(?:[^/?#]*\.)?"#.utf8)

    private var current: UInt8? { position < bytes.count ? bytes[position] : nil }

    private mutating func readAlternatives(first: [PatternNode] = []) throws(GiveUp) -> [[PatternNode]] {
        var alternatives: [[PatternNode]] = [first]
        while let byte = current, byte != UInt8(ascii: ")") {
            if byte == UInt8(ascii: "|") {
                position += 1
                alternatives.append([])
                continue
            }
            let atom = try readAtom()
            let node = try readQuantifier(applyingTo: atom)
            alternatives[alternatives.count - 1].append(node)
        }
        return alternatives
    }

    private mutating func readAtom() throws(GiveUp) -> PatternNode {
        guard let byte = current else { throw GiveUp() }
        position += 1
        switch byte {
        case UInt8(ascii: "\\"): return try readEscape()
        case UInt8(ascii: "["): return try readClass()
        case UInt8(ascii: "("): return try readGroup()
        case UInt8(ascii: "."): return .character(ByteClass(ascii: .allButNewline))
        case UInt8(ascii: "^"): return .start
        case UInt8(ascii: "$"): return .end
        case UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "?"), UInt8(ascii: "{"): throw GiveUp()
        case 0x80...: return readNonASCII(leadByte: byte)
        default: return .literal(byte)
        }
    }

    /// A non-ASCII character written literally. Under caseless matching U+212A (Kelvin sign) and
    /// U+017F (long s) match the ASCII letters k and s; every other non-ASCII character matches
    /// only non-ASCII text.
    private mutating func readNonASCII(leadByte: UInt8) -> PatternNode {
        var scalar = UInt32(leadByte)
        let extra: Int
        switch leadByte {
        case 0xC0..<0xE0: (scalar, extra) = (scalar & 0x1F, 1)
        case 0xE0..<0xF0: (scalar, extra) = (scalar & 0x0F, 2)
        default: (scalar, extra) = (scalar & 0x07, 3)
        }
        for _ in 0..<extra {
            guard let next = current, next & 0xC0 == 0x80 else { break }
            scalar = scalar << 6 | UInt32(next & 0x3F)
            position += 1
        }
        return .character(nonASCIIClass(scalar))
    }

    /// What a non-ASCII character matches among ASCII bytes: the ASCII letter it folds onto, under
    /// caseless matching; otherwise nothing.
    private func nonASCIIClass(_ scalar: UInt32) -> ByteClass {
        guard isCaseless, Self.foldsToASCII(scalar) else { return ByteClass(ascii: ASCIISet(), mayBeAlnum: false) }
        var letter = ASCIISet()
        letter.insert(scalar == 0x212A ? UInt8(ascii: "k") : UInt8(ascii: "s"))
        letter.addOtherCases()
        return ByteClass(ascii: letter)
    }

    static func foldsToASCII(_ scalar: UInt32) -> Bool { scalar == 0x212A || scalar == 0x17F }

    private mutating func readEscape() throws(GiveUp) -> PatternNode {
        guard let byte = current else { throw GiveUp() }
        position += 1
        switch byte {
        case UInt8(ascii: "d"), UInt8(ascii: "w"), UInt8(ascii: "s"), UInt8(ascii: "h"), UInt8(ascii: "v"),
            UInt8(ascii: "D"), UInt8(ascii: "W"), UInt8(ascii: "S"), UInt8(ascii: "H"), UInt8(ascii: "V"),
            UInt8(ascii: "N"), UInt8(ascii: "X"), UInt8(ascii: "R"):
            // \X and \R may match more than one character.
            let isExact = byte != UInt8(ascii: "X") && byte != UInt8(ascii: "R")
            return .character(ByteClass(ascii: ASCIISet.escape(byte) ?? .all, isExact: isExact))
        case UInt8(ascii: "p"), UInt8(ascii: "P"):
            try skipPropertyName()
            return .character(ByteClass(ascii: .all, isExact: false))
        case UInt8(ascii: "n"), UInt8(ascii: "t"), UInt8(ascii: "r"), UInt8(ascii: "f"), UInt8(ascii: "e"),
            UInt8(ascii: "a"):
            return .character(ByteClass(ascii: ASCIISet(Self.controlEscapes[byte] ?? 0)))
        case UInt8(ascii: "b"), UInt8(ascii: "B"), UInt8(ascii: "K"): return .zeroWidth
        case UInt8(ascii: "A"): return .start
        case UInt8(ascii: "z"), UInt8(ascii: "Z"): return .end
        case UInt8(ascii: "1")...UInt8(ascii: "9"):
            while let next = current, next >= UInt8(ascii: "0"), next <= UInt8(ascii: "9") { position += 1 }
            return .backReference
        case UInt8(ascii: "x"): return try characterNode(try readHexEscape())
        case UInt8(ascii: "Q"): return try readQuoted()
        default:
            // Escaped punctuation is that character; an escaped letter or digit not handled above
            // means something this reader does not model.
            guard byte < 0x80, !Self.isAlnum(byte) else { throw GiveUp() }
            return .literal(byte)
        }
    }

    /// `\Q…\E`: every character up to `\E` (or the end) is literal.
    private mutating func readQuoted() throws(GiveUp) -> PatternNode {
        var nodes: [PatternNode] = []
        while let byte = current {
            if byte == UInt8(ascii: "\\"), position + 1 < bytes.count, bytes[position + 1] == UInt8(ascii: "E") {
                position += 2
                break
            }
            position += 1
            nodes.append(byte < 0x80 ? .literal(byte) : readNonASCII(leadByte: byte))
        }
        return .group([nodes])
    }

    private mutating func readHexEscape() throws(GiveUp) -> UInt32 {
        var value: UInt32 = 0
        if current == UInt8(ascii: "{") {
            position += 1
            var digits = 0
            while let byte = current, byte != UInt8(ascii: "}") {
                guard let digit = byte.hexDigitValue.map(UInt32.init), digits < 8 else { throw GiveUp() }
                value = value << 4 | digit
                digits += 1
                position += 1
            }
            guard current == UInt8(ascii: "}"), digits > 0 else { throw GiveUp() }
            position += 1
            return value
        }
        for _ in 0..<2 {
            guard let byte = current, let digit = byte.hexDigitValue.map(UInt32.init) else { break }
            value = value << 4 | digit
            position += 1
        }
        return value
    }

    private func characterNode(_ scalar: UInt32) throws(GiveUp) -> PatternNode {
        if scalar < 0x80 { return .literal(UInt8(scalar)) }
        return .character(nonASCIIClass(scalar))
    }

    /// The characters `\n`, `\t`, `\r`, `\f`, `\e` and `\a` stand for.
    private static let controlEscapes: [UInt8: UInt8] = [
        UInt8(ascii: "n"): 0x0A, UInt8(ascii: "t"): 0x09, UInt8(ascii: "r"): 0x0D, UInt8(ascii: "f"): 0x0C,
        UInt8(ascii: "e"): 0x1B, UInt8(ascii: "a"): 0x07,
    ]

    private mutating func skipPropertyName() throws(GiveUp) {
        guard let byte = current else { throw GiveUp() }
        position += 1
        guard byte == UInt8(ascii: "{") else { return }
        while let next = current, next != UInt8(ascii: "}") { position += 1 }
        guard current != nil else { throw GiveUp() }
        position += 1
    }

    /// `[...]`: whether the class can match an ASCII letter or digit, and which ASCII bytes it can
    /// match (a superset when in doubt).
    private mutating func readClass() throws(GiveUp) -> PatternNode {
        var isNegated = false
        if current == UInt8(ascii: "^") {
            isNegated = true
            position += 1
        }
        var members = ASCIISet()
        var hasOtherMembers = false  // non-ASCII characters, \w, \d, POSIX classes, …
        // Members whose ASCII bytes are not all in `members` (POSIX classes, \p, \W, ranges into
        // non-ASCII): the class may match any ASCII byte.
        var hasUnknownASCII = false
        var isFirst = true
        var previous: UInt8?
        while let byte = current {
            if byte == UInt8(ascii: "]"), !isFirst { break }
            isFirst = false
            position += 1
            var member: UInt8?
            switch byte {
            case UInt8(ascii: "["):
                if let next = current,
                    next == UInt8(ascii: ":") || next == UInt8(ascii: ".") || next == UInt8(ascii: "=")
                {
                    guard let close = findPOSIXClassEnd(from: position + 1) else { throw GiveUp() }
                    position = close
                    hasOtherMembers = true
                    hasUnknownASCII = true
                } else {
                    member = byte
                }
            case UInt8(ascii: "\\"):
                guard let escaped = current else { throw GiveUp() }
                position += 1
                switch escaped {
                case UInt8(ascii: "d"): members.insert(UInt8(ascii: "0")...UInt8(ascii: "9"))
                case UInt8(ascii: "n"): member = 0x0A
                case UInt8(ascii: "t"): member = 0x09
                case UInt8(ascii: "r"): member = 0x0D
                case UInt8(ascii: "f"): member = 0x0C
                case UInt8(ascii: "e"): member = 0x1B
                case UInt8(ascii: "a"): member = 0x07
                case UInt8(ascii: "s"), UInt8(ascii: "h"), UInt8(ascii: "v"):
                    members.insert(0x09...0x0D)
                    members.insert(0x20)
                case UInt8(ascii: "x"):
                    let scalar = try readHexEscape()
                    if scalar < 0x80 {
                        member = UInt8(scalar)
                    } else {
                        hasOtherMembers = true
                        members.formUnion(nonASCIIClass(scalar).ascii)
                    }
                case UInt8(ascii: "p"), UInt8(ascii: "P"):
                    try skipPropertyName()
                    hasOtherMembers = true
                    hasUnknownASCII = true
                case UInt8(ascii: "w"), UInt8(ascii: "W"), UInt8(ascii: "S"), UInt8(ascii: "D"), UInt8(ascii: "H"),
                    UInt8(ascii: "V"):
                    hasOtherMembers = true
                    if let set = ASCIISet.escape(escaped) { members.formUnion(set) } else { hasUnknownASCII = true }
                default:
                    guard escaped < 0x80, !Self.isAlnum(escaped) else { throw GiveUp() }
                    member = escaped
                }
            case 0x80...:
                if case .character(let folded) = readNonASCII(leadByte: byte) { members.formUnion(folded.ascii) }
                hasOtherMembers = true
                // A range from a non-ASCII character is read as that character, '-' and the next.
                hasUnknownASCII = hasUnknownASCII || current == UInt8(ascii: "-")
            default:
                member = byte
            }
            guard let member else {
                previous = nil
                continue
            }
            // A range `a-z`. A range ending in an escape or '[' is not modelled.
            if byte == UInt8(ascii: "-"), let start = previous, let end = current, end != UInt8(ascii: "]") {
                guard end != UInt8(ascii: "\\"), end != UInt8(ascii: "[") else { throw GiveUp() }
                position += 1
                guard end >= start else { throw GiveUp() }
                if end >= 0x80 {
                    hasOtherMembers = true
                    hasUnknownASCII = true
                    members.insert(start...0x7F)
                    _ = readNonASCII(leadByte: end)
                } else {
                    members.insert(start...end)
                }
                previous = nil
                continue
            }
            members.insert(member)
            previous = member
        }
        guard current == UInt8(ascii: "]") else { throw GiveUp() }
        position += 1
        if isCaseless { members.addOtherCases() }
        if isNegated {
            return .character(
                ByteClass(
                    ascii: hasUnknownASCII ? .all : members.complement, mayBeAlnum: !members.containsAllAlnums,
                    isExact: !hasUnknownASCII))
        }
        let mayBeAlnum = members.containsAnyAlnum || hasOtherMembers
        return .character(
            ByteClass(ascii: hasUnknownASCII ? .all : members, mayBeAlnum: mayBeAlnum, isExact: !hasUnknownASCII))
    }

    private func findPOSIXClassEnd(from start: Int) -> Int? {
        var index = start
        while index + 1 < bytes.count {
            if bytes[index + 1] == UInt8(ascii: "]"), bytes[index] == bytes[start - 1] { return index + 2 }
            index += 1
        }
        return nil
    }

    private mutating func readGroup() throws(GiveUp) -> PatternNode {
        var isZeroWidth = false
        if current == UInt8(ascii: "*") { throw GiveUp() }  // verbs
        if current == UInt8(ascii: "?") {
            position += 1
            guard let kind = current else { throw GiveUp() }
            position += 1
            switch kind {
            case UInt8(ascii: ":"): break
            case UInt8(ascii: ">"): hasAtomicParts = true
            case UInt8(ascii: "="): isZeroWidth = true
            case UInt8(ascii: "!"):
                let alternatives = try readAlternatives()
                guard current == UInt8(ascii: ")") else { throw GiveUp() }
                position += 1
                return .negativeLookahead(alternatives)
            case UInt8(ascii: "<"):
                if current == UInt8(ascii: "=") || current == UInt8(ascii: "!") {
                    position += 1
                    isZeroWidth = true
                } else {
                    try skipName(until: UInt8(ascii: ">"))
                }
            case UInt8(ascii: "P"):
                guard current == UInt8(ascii: "<") else { throw GiveUp() }
                position += 1
                try skipName(until: UInt8(ascii: ">"))
            case UInt8(ascii: "'"): try skipName(until: UInt8(ascii: "'"))
            case UInt8(ascii: "#"):
                while let byte = current, byte != UInt8(ascii: ")") { position += 1 }
                guard current != nil else { throw GiveUp() }
                position += 1
                return .zeroWidth
            default: throw GiveUp()
            }
        }
        let alternatives = try readAlternatives()
        guard current == UInt8(ascii: ")") else { throw GiveUp() }
        position += 1
        guard isZeroWidth else { return .group(alternatives) }
        lookaroundBodies.append(alternatives)
        return .zeroWidth
    }

    private mutating func skipName(until terminator: UInt8) throws(GiveUp) {
        while let byte = current, byte != terminator {
            guard Self.isAlnum(byte) || byte == UInt8(ascii: "_") else { throw GiveUp() }
            position += 1
        }
        guard current == terminator else { throw GiveUp() }
        position += 1
    }

    private mutating func readQuantifier(applyingTo atom: PatternNode) throws(GiveUp) -> PatternNode {
        guard let byte = current else { return atom }
        var bounds: (min: Int, max: Int?)
        switch byte {
        case UInt8(ascii: "*"): bounds = (0, nil)
        case UInt8(ascii: "+"): bounds = (1, nil)
        case UInt8(ascii: "?"): bounds = (0, 1)
        case UInt8(ascii: "{"):
            guard let parsed = readBraces() else { throw GiveUp() }
            bounds = parsed
            position -= 1  // readBraces consumed through '}'; the common advance below steps over it
        default: return atom
        }
        position += 1
        if let next = current, next == UInt8(ascii: "+") || next == UInt8(ascii: "?") {
            hasAtomicParts = hasAtomicParts || next == UInt8(ascii: "+")
            position += 1
        }
        switch atom {
        case .start, .end, .zeroWidth, .negativeLookahead, .authority: throw GiveUp()
        default: break
        }
        if let max = bounds.max, max < bounds.min { throw GiveUp() }
        if let next = current,
            next == UInt8(ascii: "*") || next == UInt8(ascii: "+") || next == UInt8(ascii: "?")
                || next == UInt8(ascii: "{")
        {
            throw GiveUp()
        }
        return .repeated(atom, min: bounds.min, max: bounds.max)
    }

    /// `{n}`, `{n,}` or `{n,m}` at the current position; nil for anything else (PCRE2 10.42 reads
    /// other braces as literal text, a case the reader declines to model).
    private mutating func readBraces() -> (min: Int, max: Int?)? {
        var index = position + 1
        func number() -> Int? {
            var value = 0
            var digits = 0
            while index < bytes.count, bytes[index] >= UInt8(ascii: "0"), bytes[index] <= UInt8(ascii: "9") {
                value = min(value * 10 + Int(bytes[index] - UInt8(ascii: "0")), 1_000_000)
                digits += 1
                index += 1
            }
            return digits > 0 ? value : nil
        }
        guard let low = number() else { return nil }
        var high: Int? = low
        if index < bytes.count, bytes[index] == UInt8(ascii: ",") {
            index += 1
            high = number()
        }
        guard index < bytes.count, bytes[index] == UInt8(ascii: "}") else { return nil }
        position = index + 1
        return (low, high)
    }

    static func isAlnum(_ byte: UInt8) -> Bool {
        isLetter(byte) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
    }

    static func isLetter(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z"))
    }
}

/// The ASCII bytes one character of a pattern can match, and whether it can be an ASCII letter or
/// digit (which is also true of classes with non-ASCII members that are not modelled).
struct ByteClass: Equatable, Hashable {
    /// A superset of the ASCII bytes the character can match, case folding included.
    let ascii: ASCIISet
    let mayBeAlnum: Bool
    /// Whether ``ascii`` is exactly the ASCII bytes it matches, each as one character (not so for
    /// POSIX classes, `\p`, `\X`, …, which are read as any byte).
    let isExact: Bool

    init(ascii: ASCIISet, mayBeAlnum: Bool? = nil, isExact: Bool = true) {
        self.ascii = ascii
        self.mayBeAlnum = mayBeAlnum ?? ascii.containsAnyAlnum
        self.isExact = isExact
    }
}

/// A set of ASCII characters as 128 bits.
struct ASCIISet: Equatable, Hashable {
    private(set) var low: UInt64 = 0
    private(set) var high: UInt64 = 0

    init() {}

    init(_ byte: UInt8) { insert(byte) }

    init(low: UInt64, high: UInt64) {
        self.low = low
        self.high = high
    }

    /// Every ASCII character.
    static let all = ASCIISet(low: .max, high: .max)
    /// What `.` matches among ASCII characters.
    static let allButNewline = ASCIISet(low: .max & ~(1 << 0x0A), high: .max)

    /// What an escape outside or inside a class matches among ASCII characters (`\d`, `\W`, …), or
    /// nil for other escapes.
    static func escape(_ letter: UInt8) -> ASCIISet? {
        var digits = ASCIISet()
        digits.insert(UInt8(ascii: "0")...UInt8(ascii: "9"))
        var word = digits
        word.insert(UInt8(ascii: "a")...UInt8(ascii: "z"))
        word.insert(UInt8(ascii: "A")...UInt8(ascii: "Z"))
        word.insert(UInt8(ascii: "_"))
        var space = ASCIISet()
        space.insert(0x09...0x0D)
        space.insert(0x20)
        var horizontal = ASCIISet(0x09)
        horizontal.insert(0x20)
        var vertical = ASCIISet()
        vertical.insert(0x0A...0x0D)
        switch letter {
        case UInt8(ascii: "d"): return digits
        case UInt8(ascii: "D"): return digits.complement
        case UInt8(ascii: "w"): return word
        case UInt8(ascii: "W"): return word.complement
        case UInt8(ascii: "s"): return space
        case UInt8(ascii: "S"): return space.complement
        case UInt8(ascii: "h"): return horizontal
        case UInt8(ascii: "H"): return horizontal.complement
        case UInt8(ascii: "v"), UInt8(ascii: "R"): return vertical
        case UInt8(ascii: "V"): return vertical.complement
        case UInt8(ascii: "N"): return allButNewline
        case UInt8(ascii: "X"): return all
        default: return nil
        }
    }

    /// The printable characters, 0x20 to 0x7E.
    static let printable = ASCIISet(low: .max << 32, high: .max >> 1)

    func isSuperset(of other: ASCIISet) -> Bool { low & other.low == other.low && high & other.high == other.high }

    func contains(_ byte: UInt8) -> Bool {
        guard byte < 0x80 else { return false }
        return byte < 64 ? low >> UInt64(byte) & 1 == 1 : high >> UInt64(byte - 64) & 1 == 1
    }

    var complement: ASCIISet { ASCIISet(low: ~low, high: ~high) }

    var count: Int { low.nonzeroBitCount + high.nonzeroBitCount }

    var isEmpty: Bool { low == 0 && high == 0 }

    mutating func formUnion(_ other: ASCIISet) {
        low |= other.low
        high |= other.high
    }

    func union(_ other: ASCIISet) -> ASCIISet { ASCIISet(low: low | other.low, high: high | other.high) }

    func isDisjoint(with other: ASCIISet) -> Bool { low & other.low == 0 && high & other.high == 0 }

    mutating func insert(_ byte: UInt8) {
        guard byte < 0x80 else { return }
        if byte < 64 { low |= 1 << UInt64(byte) } else { high |= 1 << UInt64(byte - 64) }
    }

    mutating func insert(_ range: ClosedRange<UInt8>) {
        for byte in range where byte < 0x80 { insert(byte) }
    }

    /// Adds the other case of every letter.
    mutating func addOtherCases() {
        // Letters sit at 0x41–0x5A and 0x61–0x7A, both in `high` (bits 1–26 and 33–58).
        let upper = (high >> 1) & 0x3FF_FFFF
        let lower = (high >> 33) & 0x3FF_FFFF
        high |= (upper | lower) << 1 | (upper | lower) << 33
    }

    private static let digits: UInt64 = 0x3FF << 48
    private static let letters: UInt64 = 0x3FF_FFFF << 1 | 0x3FF_FFFF << 33

    var containsAllAlnums: Bool { low & Self.digits == Self.digits && high & Self.letters == Self.letters }
    var containsAnyAlnum: Bool { low & Self.digits != 0 || high & Self.letters != 0 }
}
