/// Which part of a request a rule's pattern is matched against.
///
/// | field | subject |
/// |---|---|
/// | `url` (default) | the normalized URL (see ``AuditRequest/normalizedURL``) |
/// | `host` | the host, lower-cased, without port or IPv6 brackets |
/// | `path` | the path as sent, `/` when the URL has none |
/// | `query` | the query as sent, without `?`; empty when there is none |
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
