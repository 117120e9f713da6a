/// Finds the parts of a pattern that can never match a canonical URL (see ``CanonicalURL``): a
/// rule written against a spelling the canonical form never has is a rule that never fires.
enum CanonicalFormCheck {
    /// One finding: where in the pattern (0-based UTF-8 offset) and what to write instead.
    struct Finding: Equatable {
        let offset: Int
        let message: String
    }

    /// The findings for `pattern` (its source) read against `field`.
    static func findings(in pattern: String, field: RequestField, isCaseInsensitive: Bool) -> [Finding] {
        let bytes = Array(pattern.utf8)
        var findings: [Finding] = []
        let readsURLText: Bool
        switch field {
        case .url, .path, .query: readsURLText = true
        default: readsURLText = false
        }
        // Where the host is in a url pattern: after `://` up to the next `/` (or a `(/|$)`-style end).
        var hostRange = 0..<0
        if case .url = field, let scheme = find(Array("://".utf8), in: bytes) {
            var end = scheme + 3
            while end < bytes.count, bytes[end] != UInt8(ascii: "/") { end += 1 }
            // `\/` escapes the slash that ends the host.
            if end > scheme + 3, bytes[end - 1] == UInt8(ascii: "\\") { end -= 1 }
            hostRange = (scheme + 3)..<end
        } else if case .host = field {
            hostRange = 0..<bytes.count
        }

        var index = 0
        var classDepth = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\\") {
                index += 2
                continue
            }
            if byte == UInt8(ascii: "[") { classDepth += 1 }
            if byte == UInt8(ascii: "]"), classDepth > 0 { classDepth -= 1 }
            if readsURLText, let decoded = percentEscapedByte(in: bytes, at: index) {
                let escape = String(decoding: bytes[index..<(index + 3)], as: UTF8.self)
                if URLParts.isUnreserved(decoded) {
                    findings.append(
                        Finding(
                            offset: index,
                            message: "'\(escape)' never matches: canonical URLs decode escapes of unreserved "
                                + "characters, so write '\(Character(Unicode.Scalar(decoded)))'"))
                } else if !isCaseInsensitive, escape != escape.uppercased() {
                    findings.append(
                        Finding(
                            offset: index,
                            message: "'\(escape)' never matches a case-sensitive rule: canonical URLs write "
                                + "escapes in upper case, so write '\(escape.uppercased())'"))
                }
                index += 3
                continue
            }
            if hostRange.contains(index), classDepth == 0 {
                if !isCaseInsensitive, byte &- UInt8(ascii: "A") < 26 {
                    findings.append(
                        Finding(
                            offset: index,
                            message: "the capital '\(Character(Unicode.Scalar(byte)))' in the host never matches "
                                + "this case-sensitive rule: canonical hosts are lower-case"))
                }
                if byte == UInt8(ascii: "@") {
                    findings.append(
                        Finding(
                            offset: index,
                            message: "'@' in the host never matches: canonical URLs have no user info (a rule on it "
                                + "takes field=userinfo)"))
                }
            }
            index += 1
        }
        if let dot = trailingHostDot(bytes, hostRange: hostRange, field: field) {
            findings.append(
                Finding(
                    offset: dot, message: "a dot at the end of the host never matches: canonical hosts have none"))
        }
        return findings
    }

    /// Where `\.` ends the host part of the pattern (before `$` for a host rule, before `/` or
    /// `:` for a url rule), if it does.
    private static func trailingHostDot(_ bytes: [UInt8], hostRange: Range<Int>, field: RequestField) -> Int? {
        guard hostRange.count >= 2 else { return nil }
        var end = hostRange.upperBound
        if case .host = field {
            guard end >= 3, bytes[end - 1] == UInt8(ascii: "$") else { return nil }
            end -= 1
        } else {
            // A url pattern's host part must be closed by a slash: `^https://api\.` is a prefix.
            guard end < bytes.count else { return nil }
        }
        guard end - 2 >= hostRange.lowerBound, bytes[end - 2] == UInt8(ascii: "\\"), bytes[end - 1] == UInt8(ascii: ".")
        else { return nil }
        return end - 2
    }

    private static func find(_ needle: [UInt8], in bytes: [UInt8]) -> Int? {
        guard bytes.count >= needle.count else { return nil }
        for start in 0...(bytes.count - needle.count) where bytes[start..<(start + needle.count)].elementsEqual(needle)
        {
            return start
        }
        return nil
    }
}
