/// Which part of a request a rule's pattern is matched against.
///
/// | field | subject |
/// |---|---|
/// | `url` (default) | the canonical URL (see ``AuditRequest/normalizedURL``) |
/// | `host` | the canonical host: IDNA-mapped lower-case ASCII, no trailing dot, IPv4 as four decimal parts, IPv6 compressed without brackets |
/// | `path` | the canonical path: dot segments resolved, repeated slashes merged, escapes of unreserved characters decoded |
/// | `query` | the canonical query, without `?`; empty when there is none |
/// | `userinfo` | the user info as written (`user:password`), empty when there is none |
/// | `method` | the method, upper-cased |
/// | `header:NAME` | the header's value; several values joined with `, `; a rule never matches a missing header |
public enum RequestField: Sendable, Hashable, CustomStringConvertible {
    /// The normalized URL.
    case url
    /// The host name.
    case host
    /// The path.
    case path
    /// The query string.
    case query
    /// The user name and password of the URL's authority.
    case userinfo
    /// The HTTP method.
    case method
    /// A header, by case-insensitive name (stored lower-cased).
    case header(String)

    /// Parses the `field=` option's value; nil when it names no field.
    public init?(option: String) {
        switch option {
        case "url": self = .url
        case "host": self = .host
        case "path": self = .path
        case "query": self = .query
        case "userinfo": self = .userinfo
        case "method": self = .method
        default:
            guard option.hasPrefix("header:") else { return nil }
            let name = option.dropFirst("header:".count)
            guard !name.isEmpty, name.allSatisfy(\.isHTTPTokenCharacter) else { return nil }
            self = .header(name.lowercased())
        }
    }

    /// The option spelling, e.g. `header:user-agent`.
    public var description: String {
        switch self {
        case .url: "url"
        case .host: "host"
        case .path: "path"
        case .query: "query"
        case .userinfo: "userinfo"
        case .method: "method"
        case .header(let name): "header:\(name)"
        }
    }
}

extension Character {
    /// Whether the character may appear in an HTTP token (method or header name, RFC 9110 `tchar`).
    var isHTTPTokenCharacter: Bool {
        guard isASCII, let ascii = asciiValue else { return false }
        return isLetter || isNumber || "!#$%&'*+-.^_`|~".utf8.contains(ascii)
    }
}
