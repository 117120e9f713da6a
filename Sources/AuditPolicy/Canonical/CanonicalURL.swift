/// A URL in the one form every rule, front-end and record uses: the form the server acts on.
///
/// For `http`, `https`, `ws`, `wss` and `ftp` it is the WHATWG URL Standard's serialization (what
/// browsers, curl's URL parser and most HTTP libraries send), plus a few additions that make
/// equal requests equal for matching:
///
/// - the host percent-decoded, mapped to ASCII by IDNA (UTS #46), lower-cased, its trailing dot
///   removed; IPv4 in any number form written as four decimal parts; IPv6 compressed, and an
///   IPv4-mapped IPv6 address written as IPv4;
/// - the scheme's default port removed; user info and fragment removed;
/// - in the path, `.` and `..` segments (also as `%2e`) resolved and repeated slashes merged;
/// - in path and query, escapes of unreserved characters (`A-Z a-z 0-9 - . _ ~`) decoded and the
///   other escapes' hex digits upper-cased; characters the standard escapes are escaped.
///
/// A URL the standard calls invalid throws ``URLRejection``. Other schemes (`app://…`) keep their
/// bytes, with scheme and host lower-cased and the fragment dropped.
///
/// ```swift
/// let url = try CanonicalURL("HTTP://WWW.RivalShop.com.:80/x/../%61dmin?de%62ug=1#top")
/// url.string   // "http://www.rivalshop.com/admin?debug=1"
/// url.changes  // host lower-cased, trailing dot removed, default port removed, …
/// ```
public struct CanonicalURL: Sendable, Hashable, CustomStringConvertible {
    private let parts: URLParts

    /// Canonicalizes `text`, or throws why the URL is invalid.
    public init(_ text: String) throws(URLRejection) {
        // Most URLs are canonical as sent: then they are only split.
        let parts = URLParts.isCanonical(text) ? URLParts(knownCanonical: text) : URLParts(text)
        if let rejection = parts.rejection { throw rejection }
        self.parts = parts
    }

    /// Whether `text` is surely its own canonical form: a check of its bytes that takes no copy, the
    /// one every decision makes first (false also when it would take the full parse to tell).
    public static func isCanonical(_ text: String) -> Bool {
        URLParts.isCanonical(text)
    }

    /// The canonical URL.
    public var string: String { parts.normalized }
    /// The canonical URL.
    public var description: String { string }
    /// The scheme, lower-cased; empty when the text has none.
    public var scheme: String { String(decoding: parts.normalizedBytes[..<parts.schemeLength], as: UTF8.self) }
    /// The host (no port, IPv6 without brackets); empty when there is none.
    public var host: String { parts.host }
    /// The port when it is not the scheme's default (special schemes only).
    public var port: Int? { parts.port }
    /// The path (`/` at least for special schemes).
    public var path: String { String(decoding: parts.normalizedBytes[parts.pathRange], as: UTF8.self) }
    /// The query without `?`; empty when there is none.
    public var query: String { String(decoding: parts.normalizedBytes[parts.queryRange], as: UTF8.self) }
    /// The user info as written (`user:password`), empty when there is none.
    public var userinfo: String { String(decoding: parts.userinfo, as: UTF8.self) }
    /// What canonicalizing changed.
    public var changes: URLChanges { parts.changes }
    /// Whether the scheme is special (http, https, ws, wss, ftp).
    public var isSpecial: Bool { parts.isSpecial }

    /// The host as an HTTP `Host` header or a CONNECT target names it: IPv6 in brackets, the port
    /// when it is not the default.
    public var authority: String {
        let bytes = parts.normalizedBytes
        var start = parts.hostRange.lowerBound
        var end = parts.hostRange.upperBound
        if start > 0, bytes[start - 1] == UInt8(ascii: "[") {
            start -= 1
            end += 1
        }
        return String(decoding: bytes[start..<end], as: UTF8.self) + (port.map { ":\($0)" } ?? "")
    }

    /// The request target of an origin-form request line: the path, and `?` and the query when
    /// the URL has a `?`.
    public var requestTarget: String {
        let bytes = parts.normalizedBytes
        return String(decoding: bytes[parts.pathRange.lowerBound...], as: UTF8.self)
    }

    /// Whether the canonical forms are equal.
    public static func == (lhs: CanonicalURL, rhs: CanonicalURL) -> Bool {
        lhs.parts.normalizedBytes == rhs.parts.normalizedBytes
    }

    /// Feeds the canonical form to `hasher`.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(parts.normalizedBytes)
    }
}
