/// Why a URL of a special scheme (`http`, `https`, `ws`, `wss`, `ftp`) was refused: the WHATWG URL
/// Standard calls it invalid, so no client following the standard would send it and a rule cannot
/// know which server or resource it names.
public enum URLRejection: Error, Sendable, Hashable, CustomStringConvertible {
    /// The URL has no host (`http:///`, `http://user@/`).
    case emptyHost
    /// The host holds a character no host may hold (a space, `<`, `%` after decoding, …).
    case forbiddenHostCharacter(Unicode.Scalar)
    /// The port is not a number from 0 to 65535.
    case invalidPort(String)
    /// The host ends in a number but is not an IPv4 address in any of its forms.
    case invalidIPv4(String)
    /// The host is in brackets but is not an IPv6 address.
    case invalidIPv6(String)
    /// The host's percent-decoded bytes are not UTF-8.
    case hostNotUTF8
    /// IDNA (UTS #46) refuses the host: a disallowed character or an invalid `xn--` label.
    case invalidDomain(String)

    /// E.g. `invalid URL: port '99999' is not a number from 0 to 65535`.
    public var description: String {
        "invalid URL: " + reason
    }

    /// Why, without the `invalid URL: ` prefix.
    public var reason: String {
        switch self {
        case .emptyHost: "it has no host"
        case .forbiddenHostCharacter(let scalar):
            "its host contains \(Self.spell(scalar)), which no host may contain"
        case .invalidPort(let port): "port '\(port)' is not a number from 0 to 65535"
        case .invalidIPv4(let host): "host '\(host)' ends in a number but is not an IPv4 address"
        case .invalidIPv6(let host): "host '\(host)' is not an IPv6 address"
        case .hostNotUTF8: "its host's percent-decoded bytes are not UTF-8"
        case .invalidDomain(let host): "IDNA refuses host '\(host)'"
        }
    }

    private static func spell(_ scalar: Unicode.Scalar) -> String {
        let hex = String(scalar.value, radix: 16, uppercase: true)
        let code = "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        return scalar.value > 0x20 && scalar.value < 0x7F ? "'\(Character(scalar))' (\(code))" : code
    }
}

/// What canonicalizing changed in a URL, for `audit check --explain` and the audit log.
public struct URLChanges: OptionSet, Sendable, Hashable, CustomStringConvertible {
    /// The bits.
    public let rawValue: UInt32

    /// Creates a set from its bits.
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Leading or trailing spaces and control characters, or tabs and newlines inside, removed.
    public static let whitespaceRemoved = URLChanges(rawValue: 1 << 0)
    /// Upper-case letters in the scheme lower-cased.
    public static let schemeLowerCased = URLChanges(rawValue: 1 << 1)
    /// Backslashes read as slashes, or the slashes after the scheme made exactly two.
    public static let slashesFixed = URLChanges(rawValue: 1 << 2)
    /// User name and password removed (a field of their own: `userinfo`).
    public static let userinfoRemoved = URLChanges(rawValue: 1 << 3)
    /// Percent-escapes in the host decoded.
    public static let hostPercentDecoded = URLChanges(rawValue: 1 << 4)
    /// The host mapped to ASCII by IDNA (UTS #46): full-width letters, ideographic full stops,
    /// soft hyphens, non-ASCII labels as `xn--` punycode.
    public static let hostMappedByIDNA = URLChanges(rawValue: 1 << 5)
    /// Upper-case letters in the host lower-cased.
    public static let hostLowerCased = URLChanges(rawValue: 1 << 6)
    /// A trailing dot after the host removed.
    public static let trailingDotRemoved = URLChanges(rawValue: 1 << 7)
    /// An IPv4 address in another number form (decimal, hex, octal, fewer parts) written as four
    /// decimal parts.
    public static let ipv4Rewritten = URLChanges(rawValue: 1 << 8)
    /// An IPv6 address written in its compressed form.
    public static let ipv6Rewritten = URLChanges(rawValue: 1 << 9)
    /// An IPv4-mapped IPv6 address (`[::ffff:a.b.c.d]`) written as its IPv4 address.
    public static let ipv4MappedIPv6Rewritten = URLChanges(rawValue: 1 << 10)
    /// The scheme's default port removed, or an empty port dropped, or leading zeros removed.
    public static let portRewritten = URLChanges(rawValue: 1 << 11)
    /// `.` and `..` segments (also as `%2e`) resolved.
    public static let dotSegmentsResolved = URLChanges(rawValue: 1 << 12)
    /// Repeated slashes in the path merged.
    public static let slashesMerged = URLChanges(rawValue: 1 << 13)
    /// Percent-escapes of unreserved characters (letters, digits, `-._~`) decoded.
    public static let unreservedDecoded = URLChanges(rawValue: 1 << 14)
    /// Characters the standard escapes (spaces, quotes, non-ASCII, …) percent-encoded.
    public static let percentEncoded = URLChanges(rawValue: 1 << 15)
    /// Lower-case hexadecimal digits of percent-escapes upper-cased.
    public static let escapesUpperCased = URLChanges(rawValue: 1 << 16)
    /// The fragment (`#…`) removed: it is never sent.
    public static let fragmentRemoved = URLChanges(rawValue: 1 << 17)

    private static let names: [(URLChanges, String)] = [
        (.whitespaceRemoved, "removed spaces, tabs or newlines"),
        (.schemeLowerCased, "lower-cased the scheme"),
        (.slashesFixed, "read backslashes as slashes / made the slashes after the scheme two"),
        (.userinfoRemoved, "removed the user name and password (field userinfo)"),
        (.hostPercentDecoded, "percent-decoded the host"),
        (.hostMappedByIDNA, "mapped the host to ASCII by IDNA (UTS #46)"),
        (.hostLowerCased, "lower-cased the host"),
        (.trailingDotRemoved, "removed the host's trailing dot"),
        (.ipv4Rewritten, "wrote the IPv4 address as four decimal parts"),
        (.ipv6Rewritten, "compressed the IPv6 address"),
        (.ipv4MappedIPv6Rewritten, "wrote the IPv4-mapped IPv6 address as IPv4"),
        (.portRewritten, "removed the default or empty port, or the port's leading zeros"),
        (.dotSegmentsResolved, "resolved '.' and '..' segments"),
        (.slashesMerged, "merged repeated slashes in the path"),
        (.unreservedDecoded, "decoded percent-escapes of unreserved characters"),
        (.percentEncoded, "percent-encoded characters that are sent escaped"),
        (.escapesUpperCased, "upper-cased the hexadecimal digits of percent-escapes"),
        (.fragmentRemoved, "removed the fragment"),
    ]

    /// One phrase per change, in the order canonicalizing makes them.
    public var phrases: [String] {
        Self.names.filter { contains($0.0) }.map(\.1)
    }

    /// The phrases joined with `; `, or `unchanged`.
    public var description: String {
        isEmpty ? "unchanged" : phrases.joined(separator: "; ")
    }
}
