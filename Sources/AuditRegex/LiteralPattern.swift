internal import CLiteralSearch

/// A pattern that is one ASCII string, matched by a byte search instead of PCRE2, with the answer
/// PCRE2 gives.
///
/// Policies hold many such rules (`ttp`, `\/track\.ashx\?`), and when one matches most requests a
/// PCRE2 call on each costs more than deciding the rest. Only a pattern read with certainty is
/// taken: printable ASCII outside PCRE2's metacharacters, and a backslash before a character that
/// is neither a letter nor a digit (which PCRE2 reads as that character). Any other pattern,
/// `\Q…\E` included, is left to PCRE2.
///
/// Without case folding an ASCII string matches exactly its bytes: in UTF mode no ASCII byte is
/// part of a longer character, even among ill-formed ones. With it, PCRE2 folds two non-ASCII
/// characters onto ASCII letters, U+212A KELVIN SIGN onto `k` and U+017F LONG S onto `s`, so a
/// caseless string with a `k` or an `s` that is not found in a subject with non-ASCII bytes is
/// left to PCRE2. No other character folds onto ASCII (checked against every code point).
/// PCRE2's match limits count steps per starting position, and matching a literal from one
/// position takes one, so a literal cannot hit a limit of two or more: a smaller limit is left to
/// PCRE2 as well.
///
/// A class, so that a `Pattern` holds one more reference and stays cheap to copy.
final class LiteralPattern: Sendable {
    /// The string's bytes, letters lower-cased when caseless.
    let bytes: [UInt8]
    let isCaseInsensitive: Bool
    /// Caseless with a `k` or an `s`: a subject with non-ASCII bytes may match through folding.
    let foldsFromNonASCII: Bool

    /// The literal `source` stands for, or nil when it is not surely one.
    init?(_ source: String, caseInsensitive: Bool, limits: MatchLimits) {
        guard limits.matchLimit >= 2, limits.depthLimit >= 2 else { return nil }
        var bytes: [UInt8] = []
        var isEscaped = false
        for byte in source.utf8 {
            guard byte > 0x20, byte < 0x7F else { return nil }
            if isEscaped {
                guard !Self.isLetterOrDigit(byte) else { return nil }
                bytes.append(byte)
                isEscaped = false
            } else if byte == UInt8(ascii: "\\") {
                isEscaped = true
            } else {
                guard !Self.metacharacters.contains(byte) else { return nil }
                bytes.append(byte)
            }
        }
        guard !isEscaped, !bytes.isEmpty else { return nil }
        if caseInsensitive {
            bytes = bytes.map { $0 &- UInt8(ascii: "A") < 26 ? $0 | 0x20 : $0 }
        }
        self.bytes = bytes
        isCaseInsensitive = caseInsensitive
        foldsFromNonASCII = caseInsensitive && bytes.contains { $0 == UInt8(ascii: "k") || $0 == UInt8(ascii: "s") }
    }

    /// Whether the literal occurs in `subject`, or nil when only PCRE2 can tell.
    func matches(_ subject: MatchSubject) -> Bool? {
        // The closures capture plain values and pointers, not `self`: a captured reference would
        // cost two atomic reference counts a match.
        let (isCaseInsensitive, foldsFromNonASCII) = (self.isCaseInsensitive, self.foldsFromNonASCII)
        return unsafe bytes.withUnsafeBufferPointer { literal in
            unsafe subject.withBytes { subject in
                unsafe Self.search(
                    literal, in: subject, isCaseInsensitive: isCaseInsensitive, foldsFromNonASCII: foldsFromNonASCII)
            }
        }
    }

    /// Whether `literal` occurs in `subject`, or nil when only PCRE2 can tell (see
    /// ``foldsFromNonASCII``).
    private static func search(
        _ literal: UnsafeBufferPointer<UInt8>, in subject: UnsafeBufferPointer<UInt8>, isCaseInsensitive: Bool,
        foldsFromNonASCII: Bool
    ) -> Bool? {
        // An empty buffer may have no base address: it holds no literal of one byte or more.
        guard let base = subject.baseAddress else { return false }
        var hasNonASCII: Int32 = 0
        let offset = unsafe withUnsafeMutablePointer(to: &hasNonASCII) { hasNonASCII in
            unsafe literal_search(
                base, subject.count, literal.baseAddress, literal.count, isCaseInsensitive ? 1 : 0,
                foldsFromNonASCII ? hasNonASCII : nil)
        }
        if offset >= 0 { return true }
        return hasNonASCII != 0 ? nil : false
    }

    /// PCRE2's metacharacters outside a class, and `]` and `}`, which are literal there but kept
    /// out to stay clear of any reading that is not.
    private static let metacharacters = Set("^$.|?*+()[]{}".utf8)

    private static func isLetterOrDigit(_ byte: UInt8) -> Bool {
        byte &- UInt8(ascii: "0") < 10 || (byte | 0x20) &- UInt8(ascii: "a") < 26
    }
}
