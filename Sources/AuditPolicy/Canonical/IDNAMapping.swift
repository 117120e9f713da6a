import Foundation

/// Domain to ASCII as the WHATWG URL Standard runs it: UTS #46 processing, non-transitional, with
/// `UseSTD3ASCIIRules`, `CheckHyphens` and `VerifyDnsLength` off; then punycode for labels that
/// are not ASCII.
///
/// The mapping table (``table``, generated from Unicode's IDNA mapping table) is parsed on the first
/// host that is not ASCII; ASCII hosts never reach this type. Bidi and joiner rules (CheckBidi,
/// CheckJoiners) are not applied: a host they would refuse is mapped like any other.
enum IDNAMapping {
    /// How UTS #46 treats a range of code points.
    private enum Status: UInt8 {
        case valid, mapped, ignored, disallowed
    }

    /// The parsed table: range starts ascending, each range's status and, when mapped, where its
    /// mapping is in `scalars`.
    private struct Table: Sendable {
        var starts: [UInt32] = []
        var statuses: [Status] = []
        var mappings: [Range<Int32>] = []
        var scalars: [UInt32] = []
    }

    private static let parsed: Table = {
        var table = Table()
        for line in Self.table.split(separator: "\n") {
            let fields = line.split(separator: " ")
            guard fields.count >= 2, let start = UInt32(fields[0], radix: 16) else { continue }
            let status: Status =
                switch fields[1] {
                case "V": .valid
                case "M": .mapped
                case "I": .ignored
                default: .disallowed
                }
            let first = Int32(table.scalars.count)
            for field in fields.dropFirst(2) { table.scalars.append(UInt32(field, radix: 16) ?? 0xFFFD) }
            table.starts.append(start)
            table.statuses.append(status)
            table.mappings.append(first..<Int32(table.scalars.count))
        }
        return table
    }()

    /// `scalar`'s row in the table (the last range starting at or before it).
    private static func row(of scalar: UInt32) -> Int {
        let starts = parsed.starts
        var low = 0
        var high = starts.count
        while high - low > 1 {
            let middle = (low + high) / 2
            if starts[middle] <= scalar { low = middle } else { high = middle }
        }
        return low
    }

    /// Whether UTS #46 keeps `scalar` as it is.
    private static func isValid(_ scalar: Unicode.Scalar) -> Bool {
        if scalar.isASCII { return !(scalar.value >= 0x41 && scalar.value <= 0x5A) }
        return parsed.statuses[row(of: scalar.value)] == .valid
    }

    /// `domain` (already percent-decoded) as ASCII, or the reason IDNA refuses it.
    static func toASCII(_ domain: String) -> Result<String, URLRejection> {
        var mapped = String.UnicodeScalarView()
        for scalar in domain.unicodeScalars {
            if scalar.isASCII {
                mapped.append(
                    scalar.value >= 0x41 && scalar.value <= 0x5A ? Unicode.Scalar(UInt8(scalar.value | 0x20)) : scalar)
                continue
            }
            let row = row(of: scalar.value)
            switch parsed.statuses[row] {
            case .valid: mapped.append(scalar)
            case .ignored: continue
            case .disallowed: return .failure(.invalidDomain(domain))
            case .mapped:
                let range = parsed.mappings[row]
                for index in Int(range.lowerBound)..<Int(range.upperBound) {
                    guard let mappedScalar = Unicode.Scalar(parsed.scalars[index]) else {
                        return .failure(.invalidDomain(domain))
                    }
                    mapped.append(mappedScalar)
                }
            }
        }
        let normalized = String(mapped).precomposedStringWithCanonicalMapping
        var labels: [String] = []
        // Split at the full stop scalar, not at characters: a full stop followed by a combining
        // mark is one character.
        let labelScalars = normalized.unicodeScalars.split(separator: ".", omittingEmptySubsequences: false)
        for scalars in labelScalars {
            let label = Substring(Substring.UnicodeScalarView(scalars))
            if label.unicodeScalars.allSatisfy(\.isASCII) {
                if label.lowercased().hasPrefix("xn--") {
                    guard isValidPunycodeLabel(label.dropFirst(4)) else { return .failure(.invalidDomain(domain)) }
                }
                labels.append(String(label))
                continue
            }
            // A label with the ACE prefix must be ASCII (UTS #46 validity criteria), and a zero-width
            // joiner or non-joiner must follow a virama (CheckJoiners, RFC 5892 appendix A.1–A.2;
            // the non-joiner's joining-type context is not applied, so such a label is refused).
            guard !label.lowercased().hasPrefix("xn--"), label.unicodeScalars.allSatisfy(isValid),
                hasJoinersOnlyAfterVirama(label.unicodeScalars), !startsWithMark(label.unicodeScalars),
                let encoded = Punycode.encode(label.unicodeScalars)
            else { return .failure(.invalidDomain(domain)) }
            labels.append("xn--" + encoded)
        }
        let result = labels.joined(separator: ".")
        return result.isEmpty ? .failure(.invalidDomain(domain)) : .success(result)
    }

    /// Whether `label` begins with a combining mark, which no label may (UTS #46 validity criteria).
    private static func startsWithMark(_ label: some Sequence<Unicode.Scalar>) -> Bool {
        guard let first = label.first(where: { _ in true }) else { return false }
        switch first.properties.generalCategory {
        case .nonspacingMark, .spacingMark, .enclosingMark: return true
        default: return false
        }
    }

    /// Whether the first zero-width joiner or non-joiner of `label`, if any, follows a virama: the
    /// CheckJoiners rule as the reference parser (ada-url) applies it, to the first one only.
    private static func hasJoinersOnlyAfterVirama(_ label: Substring.UnicodeScalarView) -> Bool {
        var previous: Unicode.Scalar?
        for scalar in label {
            if scalar.value == 0x200C || scalar.value == 0x200D {
                return previous?.properties.canonicalCombiningClass == .virama
            }
            previous = scalar
        }
        return true
    }

    /// Whether the part of an `xn--` label after the prefix decodes to a label UTS #46 accepts: not
    /// empty, not all ASCII, every code point valid, in NFC.
    static func isValidPunycodeLabel(_ encoded: Substring) -> Bool {
        guard let decoded = Punycode.decode(encoded), !decoded.isEmpty, !decoded.allSatisfy(\.isASCII),
            decoded.allSatisfy(isValid), !startsWithMark(decoded)
        else { return false }
        var view = String.UnicodeScalarView()
        view.append(contentsOf: decoded)
        let text = String(view)
        return text.precomposedStringWithCanonicalMapping.unicodeScalars.elementsEqual(text.unicodeScalars)
    }
}

/// Punycode (RFC 3492), the encoding of IDNA's `xn--` labels.
enum Punycode {
    private static let base = 36
    private static let tMin = 1
    private static let tMax = 26
    private static let skew = 38
    private static let damp = 700
    private static let initialBias = 72
    private static let initialN = 128

    private static func adapt(_ delta: Int, _ points: Int, _ isFirst: Bool) -> Int {
        var delta = isFirst ? delta / damp : delta / 2
        delta += delta / points
        var k = 0
        while delta > ((base - tMin) * tMax) / 2 {
            delta /= base - tMin
            k += base
        }
        return k + (((base - tMin + 1) * delta) / (delta + skew))
    }

    private static func digit(_ value: Int) -> Character {
        Character(Unicode.Scalar(UInt8(value < 26 ? value + 97 : value + 22)))
    }

    /// The lower-case punycode of `scalars`, or nil on overflow.
    static func encode(_ scalars: some Collection<Unicode.Scalar>) -> String? {
        let input = scalars.map { Int($0.value) }
        var output = ""
        for value in input where value < 0x80 { output.append(Character(Unicode.Scalar(UInt8(value)))) }
        let basicCount = output.count
        var handled = basicCount
        if basicCount > 0 { output.append("-") }
        var n = initialN
        var delta = 0
        var bias = initialBias
        while handled < input.count {
            guard let next = input.filter({ $0 >= n }).min() else { return nil }
            let (product, overflow) = (next - n).multipliedReportingOverflow(by: handled + 1)
            guard !overflow, delta <= Int(Int32.max) - product else { return nil }
            delta += product
            n = next
            for value in input {
                if value < n { delta += 1 }
                guard delta <= Int(Int32.max) else { return nil }
                guard value == n else { continue }
                var q = delta
                var k = base
                while true {
                    let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                    if q < t { break }
                    output.append(digit(t + (q - t) % (base - t)))
                    q = (q - t) / (base - t)
                    k += base
                }
                output.append(digit(q))
                bias = adapt(delta, handled + 1, handled == basicCount)
                delta = 0
                handled += 1
            }
            delta += 1
            n += 1
        }
        return output
    }

    /// The code points `encoded` stands for, or nil when it is not valid punycode.
    static func decode(_ encoded: Substring) -> [Unicode.Scalar]? {
        let bytes = Array(encoded.utf8)
        var output: [Unicode.Scalar] = []
        var position = 0
        if let dash = bytes.lastIndex(of: UInt8(ascii: "-")) {
            for byte in bytes[..<dash] {
                guard byte < 0x80 else { return nil }
                output.append(Unicode.Scalar(byte))
            }
            position = dash + 1
        }
        var n = initialN
        var i = 0
        var bias = initialBias
        while position < bytes.count {
            let oldI = i
            var w = 1
            var k = base
            while true {
                guard position < bytes.count else { return nil }
                let byte = bytes[position] | 0x20
                position += 1
                let value: Int
                if byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z") {
                    value = Int(byte - UInt8(ascii: "a"))
                } else if bytes[position - 1] >= UInt8(ascii: "0") && bytes[position - 1] <= UInt8(ascii: "9") {
                    value = Int(bytes[position - 1] - UInt8(ascii: "0")) + 26
                } else {
                    return nil
                }
                let (scaled, overflow) = value.multipliedReportingOverflow(by: w)
                guard !overflow, i <= Int(Int32.max) - scaled else { return nil }
                i += scaled
                let t = k <= bias ? tMin : (k >= bias + tMax ? tMax : k - bias)
                if value < t { break }
                let (nextW, overflowW) = w.multipliedReportingOverflow(by: base - t)
                guard !overflowW, nextW <= Int(Int32.max) else { return nil }
                w = nextW
                k += base
            }
            bias = adapt(i - oldI, output.count + 1, oldI == 0)
            n += i / (output.count + 1)
            i %= output.count + 1
            guard n <= 0x10FFFF, let scalar = Unicode.Scalar(UInt32(n)) else { return nil }
            output.insert(scalar, at: i)
            i += 1
        }
        return output
    }
}
