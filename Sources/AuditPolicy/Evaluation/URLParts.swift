/// A URL split the way policies see it, without Foundation's rewriting: only the scheme and host
/// are changed (lower-cased) and the default port dropped; everything else is kept as sent.
struct URLParts: Sendable {
    let normalized: String
    let host: String
    let path: String
    let query: String

    private static let defaultPorts = ["http": "80", "https": "443", "ws": "80", "wss": "443", "ftp": "21"]

    init(_ url: String) {
        let withoutFragment = url.firstIndex(of: "#").map { url[..<$0] } ?? url[...]
        guard let separator = withoutFragment.range(of: "://"),
            Self.isScheme(withoutFragment[..<separator.lowerBound])
        else {
            normalized = String(withoutFragment)
            host = ""
            path = ""
            query = ""
            return
        }
        let scheme = withoutFragment[..<separator.lowerBound].lowercased()
        let rest = withoutFragment[separator.upperBound...]
        let authorityEnd = rest.firstIndex { $0 == "/" || $0 == "?" } ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        let pathAndQuery = rest[authorityEnd...]

        var userInfo = ""
        var hostAndPort = authority
        if let at = authority.lastIndex(of: "@") {
            userInfo = String(authority[...at])
            hostAndPort = authority[authority.index(after: at)...]
        }
        var hostText = hostAndPort
        var port: Substring = ""
        if hostAndPort.hasPrefix("["), let close = hostAndPort.firstIndex(of: "]") {
            hostText = hostAndPort[...close]
            let afterClose = hostAndPort[hostAndPort.index(after: close)...]
            if afterClose.hasPrefix(":") { port = afterClose.dropFirst() }
        } else if let colon = hostAndPort.lastIndex(of: ":") {
            hostText = hostAndPort[..<colon]
            port = hostAndPort[hostAndPort.index(after: colon)...]
        }
        let lowerHost = hostText.lowercased()
        let keepsPort = !port.isEmpty && Self.defaultPorts[scheme] != String(port)
        normalized = scheme + "://" + userInfo + lowerHost + (keepsPort ? ":" + port : "") + pathAndQuery
        host =
            lowerHost.hasPrefix("[") && lowerHost.hasSuffix("]") ? String(lowerHost.dropFirst().dropLast()) : lowerHost

        if let questionMark = pathAndQuery.firstIndex(of: "?") {
            path = String(pathAndQuery[..<questionMark])
            query = String(pathAndQuery[pathAndQuery.index(after: questionMark)...])
        } else {
            path = String(pathAndQuery)
            query = ""
        }
    }

    /// The path rules with `field=path` see: `/` when the URL has none, as on the request line.
    var requestPath: String { path.isEmpty ? "/" : path }

    private static func isScheme(_ text: Substring) -> Bool {
        guard let first = text.first, first.isASCII, first.isLetter else { return false }
        return text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) }
    }
}
