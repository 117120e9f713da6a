extension URLParts {
    /// Whether `url` is surely its own canonical form, so that a policy can match and index the
    /// URL as sent rather than a canonical copy; false also when it would take the full parse to
    /// tell.
    ///
    /// True for `http://` or `https://` as written, a host of lower-case letters, digits, dots and
    /// dashes that does not end in a dot or a label starting with a digit, then a path and
    /// query of printable ASCII with no byte the canonical form escapes or decodes, no `//` or
    /// dot segment in the path, percent-escapes only of reserved bytes in upper-case hex, and no
    /// fragment. Most URLs are sent so.
    static func isCanonical(_ url: String) -> Bool {
        let bytes = url.utf8.span
        guard let authority = lowerCaseHTTPAuthorityStart(bytes) else { return false }
        let hostEnd = bytes.hostSpan(from: authority)
        guard hostEnd > authority, hostEnd < bytes.count, bytes[hostEnd] == UInt8(ascii: "/"),
            bytes[hostEnd - 1] != UInt8(ascii: ".")
        else { return false }
        var labelStart = hostEnd - 1
        while labelStart > authority, bytes[labelStart - 1] != UInt8(ascii: ".") { labelStart -= 1 }
        // A last label starting with a digit may be (part of) an IPv4 address.
        guard bytes[labelStart] &- UInt8(ascii: "0") >= 10 else { return false }
        let (low, high) = (Self.plainLow, Self.plainHigh)
        var index = hostEnd
        var isQuery = false
        var previous: UInt8 = 0
        while index < bytes.count {
            let byte = bytes[index]
            let isPlain =
                byte < 0x40 ? (low >> UInt64(byte)) & 1 != 0 : byte < 0x80 && (high >> UInt64(byte &- 0x40)) & 1 != 0
            if !isPlain {
                switch byte {
                case UInt8(ascii: "/"):
                    if !isQuery, previous == UInt8(ascii: "/") { return false }
                case UInt8(ascii: "."):
                    if !isQuery, previous == UInt8(ascii: "/") {
                        let next = bytes.byteOrZero(at: index + 1)
                        if next == 0 || next == UInt8(ascii: "/") || next == UInt8(ascii: "?")
                            || next == UInt8(ascii: ".")
                        {
                            return false
                        }
                    }
                case UInt8(ascii: "?"):
                    isQuery = true
                case UInt8(ascii: "%"):
                    guard index + 2 < bytes.count, let high = Self.upperHexValue(bytes[index + 1]),
                        let low = Self.upperHexValue(bytes[index + 2]), !isUnreserved(high << 4 | low)
                    else { return false }
                    index += 3
                    previous = 0
                    continue
                case UInt8(ascii: "'"):
                    if isQuery { return false }
                case UInt8(ascii: "`"), UInt8(ascii: "{"), UInt8(ascii: "}"):
                    if !isQuery { return false }
                default:
                    return false
                }
            }
            previous = byte
            index += 1
        }
        return true
    }

    /// Bit n set: byte n (under 0x40) is kept as it is anywhere in a canonical path or query.
    private static let plainLow: UInt64 = plainBits(0x00..<0x40)
    /// Bit n set: byte 0x40 + n is kept as it is anywhere in a canonical path or query.
    private static let plainHigh: UInt64 = plainBits(0x40..<0x80)

    private static func plainBits(_ range: Range<UInt8>) -> UInt64 {
        let special = Array("\"#%'./<>?\\`{}".utf8)
        var bits: UInt64 = 0
        for byte in range where byte > 0x20 && byte < 0x7F && !special.contains(byte) {
            bits |= 1 << UInt64(byte - range.lowerBound)
        }
        return bits
    }

    private static func upperHexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    /// Where the authority starts when `bytes` begins with `https://` or `http://` as written (most
    /// URLs), told by one load; nil otherwise.
    private static func lowerCaseHTTPAuthorityStart(_ bytes: Span<UInt8>) -> Int? {
        guard bytes.count >= 8 else { return nil }
        let word = bytes.word64(at: 0)
        // "https://" and "http://", first byte lowest.
        if word == 0x2F2F_3A73_7074_7468 { return 8 }
        if word & 0x00FF_FFFF_FFFF_FFFF == 0x002F_2F3A_7074_7468 { return 7 }
        return nil
    }
}
