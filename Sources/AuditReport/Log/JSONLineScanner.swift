/// A forward-only reader of one JSON value held in UTF-8 bytes, for the audit log's fast path.
///
/// Every read returns nil (and stops) when the bytes are not what was asked for, so a caller can
/// give up on the line and leave it to Foundation's `JSONDecoder`, which says what is wrong.
/// Strings are validated as UTF-8 and unescaped exactly as JSON says.
///
/// It reads through a buffer pointer, and is the one place in this module that reads memory
/// through a pointer for the log (marked `unsafe` expression by expression): a scanner exists only
/// inside ``scan(_:_:)``, which keeps the bytes alive, and every read is at an index it has checked
/// against the end. What it hands on is safe (`String`s, numbers, and `Span`s to parse). (Reading
/// an `ArraySlice` instead checks every index and costs the report a third more time.)
@safe
struct JSONLineScanner {
    private let bytes: UnsafeBufferPointer<UInt8>
    private var position = 0
    private var skipDepth = 0

    private init(_ bytes: UnsafeBufferPointer<UInt8>) {
        unsafe self.bytes = bytes
    }

    /// Calls `body` with a scanner at the start of `bytes`, valid only during the call.
    static func scan<Result>(_ bytes: ArraySlice<UInt8>, _ body: (inout JSONLineScanner) -> Result) -> Result {
        unsafe bytes.withUnsafeBufferPointer { buffer in
            var scanner = unsafe JSONLineScanner(buffer)
            return body(&scanner)
        }
    }

    /// Whether only whitespace is left.
    mutating func isAtEnd() -> Bool {
        skipWhitespace()
        return unsafe position == bytes.endIndex
    }

    private mutating func skipWhitespace() {
        while unsafe position < bytes.endIndex {
            switch unsafe bytes[position] {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"): position += 1
            default: return
            }
        }
    }

    private mutating func peek() -> UInt8? {
        skipWhitespace()
        return unsafe position < bytes.endIndex ? bytes[position] : nil
    }

    private mutating func consume(_ byte: UInt8) -> Bool {
        guard peek() == byte else { return false }
        position += 1
        return true
    }

    /// Reads `null` if it comes next.
    mutating func consumeNull() -> Bool {
        guard peek() == UInt8(ascii: "n"), unsafe bytes[position...].starts(with: "null".utf8) else { return false }
        position += 4
        return true
    }

    /// Reads an object whose keys of interest are the cases of `Field`, calling `field` with each
    /// one met; `field` must read the value and return false to give up. Other keys' values are
    /// skipped (as `JSONDecoder` ignores unknown keys). A key of interest seen twice, or written
    /// with escapes, gives up too.
    mutating func readObject<Field: JSONFields>(
        _: Field.Type, _ field: (inout JSONLineScanner, Field) -> Bool
    ) -> Bool {
        guard consume(UInt8(ascii: "{")) else { return false }
        if consume(UInt8(ascii: "}")) { return true }
        var seen: UInt64 = 0
        let keys = Field.keys
        // Keys usually come in the order of the cases (the writer sorts them): try the case after
        // the last one first.
        var expected = 0
        repeat {
            guard let key = readPlainKey(), consume(UInt8(ascii: ":")) else { return false }
            let found =
                expected < keys.count && spells(key, keys[expected])
                ? expected : keys.firstIndex { spells(key, $0) }
            guard let index = found, let known = Field(rawValue: index) else {
                guard skipValue() else { return false }
                continue
            }
            guard seen & (1 << index) == 0, field(&self, known) else { return false }
            seen |= 1 << index
            expected = index + 1
        } while consume(UInt8(ascii: ","))
        return consume(UInt8(ascii: "}"))
    }

    private func spells(_ key: Range<Int>, _ name: [UInt8]) -> Bool {
        unsafe key.count == name.count && bytes[key].elementsEqual(name)
    }

    /// Reads an array, calling `element` for each element; `element` returns false to give up.
    mutating func readArray(_ element: (inout JSONLineScanner) -> Bool) -> Bool {
        guard consume(UInt8(ascii: "[")) else { return false }
        if consume(UInt8(ascii: "]")) { return true }
        repeat {
            guard element(&self) else { return false }
        } while consume(UInt8(ascii: ","))
        return consume(UInt8(ascii: "]"))
    }

    /// Reads an array of strings.
    mutating func readStringArray() -> [String]? {
        var strings: [String] = []
        let isArray = readArray { scanner in
            guard let string = scanner.readString() else { return false }
            strings.append(string)
            return true
        }
        return isArray ? strings : nil
    }

    private mutating func readPlainKey() -> Range<Int>? {
        guard consume(UInt8(ascii: "\"")) else { return nil }
        let start = position
        skipPlainWords()
        while unsafe position < bytes.endIndex {
            switch unsafe bytes[position] {
            case UInt8(ascii: "\""):
                position += 1
                return start..<position - 1
            case UInt8(ascii: "\\"), 0..<0x20: return nil
            default: position += 1
            }
        }
        return nil
    }

    /// Reads a string, unescaping it; nil for anything that is not a valid JSON string.
    mutating func readString() -> String? {
        guard consume(UInt8(ascii: "\"")) else { return nil }
        let start = position
        switch scanString() {
        case .plain(let isASCII):
            let content = unsafe bytes[start..<position - 1]
            // ASCII is valid UTF-8 as it stands; only other bytes need checking.
            return unsafe isASCII
                ? String(decoding: content, as: UTF8.self) : String(validating: content, as: UTF8.self)
        case .escaped: return readEscapedString(from: start)
        case .invalid: return nil
        }
    }

    /// Reads a string as ``readString()`` does without building it (unless it has escapes):
    /// whether it is a valid JSON string.
    mutating func skipString() -> Bool {
        guard consume(UInt8(ascii: "\"")) else { return false }
        let start = position
        switch scanString() {
        case .plain(let isASCII):
            return unsafe isASCII || String(validating: bytes[start..<position - 1], as: UTF8.self) != nil
        case .escaped: return readEscapedString(from: start) != nil
        case .invalid: return false
        }
    }

    /// What ``scanString()`` found.
    private enum StringScan {
        /// The string ends at the quote before `position`, without escapes.
        case plain(isASCII: Bool)
        /// An escape at `position`.
        case escaped
        /// A control character, or no closing quote.
        case invalid
    }

    /// Scans a string's content from `position` (after its opening quote) up to its closing quote
    /// or its first escape.
    private mutating func scanString() -> StringScan {
        var isASCII = true
        skipPlainWords()
        while unsafe position < bytes.endIndex {
            switch unsafe bytes[position] {
            case UInt8(ascii: "\""):
                position += 1
                return .plain(isASCII: isASCII)
            case UInt8(ascii: "\\"): return .escaped
            case 0..<0x20: return .invalid
            case 0x80...:
                isASCII = false
                position += 1
            default: position += 1
            }
        }
        return .invalid
    }

    /// Moves `position` past whole 8-byte words of plain ASCII (no quote, backslash, control
    /// byte or byte of 0x80 and up), so that the byte loop after it sees only a string's end.
    private mutating func skipPlainWords() {
        guard let base = unsafe bytes.baseAddress else { return }
        let ones: UInt64 = 0x0101_0101_0101_0101
        let highs: UInt64 = 0x8080_8080_8080_8080
        // Whether a byte of `word` is below `limit` (at most 0x80): exact, never a false "no".
        func hasByte(below limit: UInt64, in word: UInt64) -> Bool { (word &- limit &* ones) & ~word & highs != 0 }
        while unsafe bytes.endIndex - position >= 8 {
            let word = unsafe UnsafeRawPointer(base + position).loadUnaligned(as: UInt64.self)
            if word & highs != 0 || hasByte(below: 0x20, in: word) || hasByte(below: 1, in: word ^ (0x22 &* ones))
                || hasByte(below: 1, in: word ^ (0x5C &* ones))
            {
                return
            }
            position += 8
        }
    }

    /// Reads an array of strings as ``readStringArray()`` does, without building them.
    mutating func skipStringArray() -> Bool {
        readArray { $0.skipString() }
    }

    /// Reads a string written without escapes or non-ASCII bytes and returns what `parse` makes of
    /// its bytes (no `String` is made); nil when the next value is anything else.
    mutating func readPlainString<Value>(_ parse: (Span<UInt8>) -> Value?) -> Value? {
        guard consume(UInt8(ascii: "\"")) else { return nil }
        let start = position
        while unsafe position < bytes.endIndex {
            switch unsafe bytes[position] {
            case UInt8(ascii: "\""):
                position += 1
                return unsafe parse(UnsafeBufferPointer(rebasing: bytes[start..<position - 1]).span)
            case UInt8(ascii: "\\"), 0..<0x20, 0x80...: return nil
            default: position += 1
            }
        }
        return nil
    }

    private mutating func readEscapedString(from start: Int) -> String? {
        var unescaped = unsafe Array(bytes[start..<position])
        while unsafe position < bytes.endIndex {
            let byte = unsafe bytes[position]
            position += 1
            switch byte {
            case UInt8(ascii: "\""): return String(validating: unescaped, as: UTF8.self)
            case 0..<0x20: return nil
            case UInt8(ascii: "\\"):
                guard unsafe position < bytes.endIndex else { return nil }
                let escape = unsafe bytes[position]
                position += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): unescaped.append(escape)
                case UInt8(ascii: "b"): unescaped.append(0x08)
                case UInt8(ascii: "f"): unescaped.append(0x0C)
                case UInt8(ascii: "n"): unescaped.append(0x0A)
                case UInt8(ascii: "r"): unescaped.append(0x0D)
                case UInt8(ascii: "t"): unescaped.append(0x09)
                case UInt8(ascii: "u"):
                    guard let scalar = readUnicodeEscape() else { return nil }
                    unescaped.append(contentsOf: String(Character(scalar)).utf8)
                default: return nil
                }
            default: unescaped.append(byte)
            }
        }
        return nil
    }

    /// The scalar of `XXXX` (after `\u`), joining a surrogate pair written as two escapes.
    private mutating func readUnicodeEscape() -> Unicode.Scalar? {
        guard let high = readHex4() else { return nil }
        guard (0xD800..<0xDC00).contains(high) else { return Unicode.Scalar(high) }
        guard unsafe bytes[position...].starts(with: #"\u"#.utf8) else { return nil }
        position += 2
        guard let low = readHex4(), (0xDC00..<0xE000).contains(low) else { return nil }
        return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
    }

    private mutating func readHex4() -> UInt32? {
        guard unsafe bytes.endIndex - position >= 4 else { return nil }
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let digit = unsafe Self.hexValue(bytes[position]) else { return nil }
            value = value << 4 | digit
            position += 1
        }
        return value
    }

    /// The value of a hexadecimal digit (either case), or nil.
    static func hexValue(_ byte: UInt8) -> UInt32? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt32(byte - UInt8(ascii: "0"))
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt32(byte - UInt8(ascii: "a") + 10)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt32(byte - UInt8(ascii: "A") + 10)
        default: nil
        }
    }

    /// Reads a plain integer (optional minus, digits, no fraction or exponent) that fits `Int`.
    mutating func readInt() -> Int? {
        let isNegative = consume(UInt8(ascii: "-"))
        guard let magnitude = readDigits(), magnitude <= UInt64(Int.max) else { return nil }
        return isNegative ? -Int(magnitude) : Int(magnitude)
    }

    /// Reads a plain non-negative integer that fits `UInt64`.
    mutating func readUInt64() -> UInt64? { readDigits() }

    private mutating func readDigits() -> UInt64? {
        skipWhitespace()
        let start = position
        var value: UInt64 = 0
        while unsafe position < bytes.endIndex, unsafe bytes[position] >= UInt8(ascii: "0"),
            unsafe bytes[position] <= UInt8(ascii: "9")
        {
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = unsafe times10.addingReportingOverflow(UInt64(bytes[position] - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
            position += 1
        }
        guard position > start, unsafe position - start == 1 || bytes[start] != UInt8(ascii: "0") else { return nil }
        guard unsafe position == bytes.endIndex || !Self.continuesNumber(bytes[position]) else { return nil }
        return value
    }

    /// Reads a JSON number as a `Double`.
    mutating func readDouble() -> Double? {
        skipWhitespace()
        let start = position
        if unsafe position < bytes.endIndex, unsafe bytes[position] == UInt8(ascii: "-") { position += 1 }
        let integerStart = position
        skipDigits()
        guard position > integerStart, unsafe position - integerStart == 1 || bytes[integerStart] != UInt8(ascii: "0")
        else {
            return nil
        }
        if unsafe position < bytes.endIndex, unsafe bytes[position] == UInt8(ascii: ".") {
            position += 1
            let fractionStart = position
            skipDigits()
            guard position > fractionStart else { return nil }
        }
        if unsafe position < bytes.endIndex, unsafe bytes[position] | 0x20 == UInt8(ascii: "e") {
            position += 1
            if unsafe position < bytes.endIndex,
                unsafe bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-")
            {
                position += 1
            }
            let exponentStart = position
            skipDigits()
            guard position > exponentStart else { return nil }
        }
        if let value = unsafe Self.exactDouble(UnsafeBufferPointer(rebasing: bytes[start..<position]).span) {
            return value
        }
        guard let text = unsafe String(validating: bytes[start..<position], as: UTF8.self), let value = Double(text),
            value.isFinite
        else { return nil }
        return value
    }

    /// Powers of ten that a `Double` holds exactly.
    private static let exactPowersOfTen: [Double] = (0...22).map { exponent in
        (0..<exponent).reduce(1.0) { power, _ in power * 10 }
    }

    /// The value of a valid JSON number with at most 15 significant digits and no exponent,
    /// computed exactly as `strtod` rounds it (both operands are exact, and one IEEE division
    /// rounds correctly); nil for any other number.
    private static func exactDouble(_ text: Span<UInt8>) -> Double? {
        var mantissa: Int64 = 0
        var digits = 0
        var fractionDigits = 0
        var isFraction = false
        let isNegative = !text.isEmpty && text[0] == UInt8(ascii: "-")
        for index in (isNegative ? 1 : 0)..<text.count {
            let byte = text[index]
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"):
                mantissa = mantissa * 10 + Int64(byte - UInt8(ascii: "0"))
                digits += 1
                if isFraction { fractionDigits += 1 }
            case UInt8(ascii: "."): isFraction = true
            default: return nil
            }
            guard digits <= 15 else { return nil }
        }
        let magnitude = Double(mantissa) / exactPowersOfTen[fractionDigits]
        return isNegative ? -magnitude : magnitude
    }

    private mutating func skipDigits() {
        while unsafe position < bytes.endIndex, unsafe bytes[position] >= UInt8(ascii: "0"),
            unsafe bytes[position] <= UInt8(ascii: "9")
        {
            position += 1
        }
    }

    private static func continuesNumber(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: ".") || byte | 0x20 == UInt8(ascii: "e")
            || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
    }

    /// Skips any JSON value (for keys the record does not know, which `JSONDecoder` ignores too);
    /// gives up past 64 levels of nesting rather than recurse without end.
    mutating func skipValue() -> Bool {
        guard skipDepth < 64, let next = peek() else { return false }
        skipDepth += 1
        defer { skipDepth -= 1 }
        switch next {
        case UInt8(ascii: "{"): return readObject(NoFields.self) { _, _ in false }
        case UInt8(ascii: "["): return readArray { $0.skipValue() }
        case UInt8(ascii: "\""): return skipString()
        case UInt8(ascii: "t"): return consumeLiteral("true")
        case UInt8(ascii: "f"): return consumeLiteral("false")
        case UInt8(ascii: "n"): return consumeNull()
        default: return readDouble() != nil
        }
    }

    private mutating func consumeLiteral(_ literal: String) -> Bool {
        guard unsafe bytes[position...].starts(with: literal.utf8) else { return false }
        position += literal.utf8.count
        return true
    }
}

/// The keys an object is read for: one case per key, spelled as the case's name, numbered from 0
/// in order (at most 64).
protocol JSONFields: CaseIterable, RawRepresentable<Int> {
    /// Each case's name as UTF-8 bytes, indexed by raw value; declare as `static let keys = keyBytes()`.
    static var keys: [[UInt8]] { get }
}

extension JSONFields {
    /// Each case's name as UTF-8 bytes, in raw-value order.
    static func keyBytes() -> [[UInt8]] {
        allCases.sorted { $0.rawValue < $1.rawValue }.map { Array("\($0)".utf8) }
    }
}

/// An object read only to be skipped.
private struct NoFields: JSONFields {
    static let keys: [[UInt8]] = []
    static var allCases: [NoFields] { [] }
    let rawValue: Int
    init?(rawValue: Int) { nil }
}
