/// A URL in the canonical form policies see, split into the ranges rules read.
///
/// For the special schemes (`http`, `https`, `ws`, `wss`, `ftp`) the form is the WHATWG URL
/// Standard's serialization, with a few additions that make equal requests equal for matching:
/// the user info removed (kept in ``userinfo``), the fragment removed, the host's trailing dot
/// removed, an IPv4-mapped IPv6 address written as IPv4, repeated slashes in the path merged,
/// percent-escapes of unreserved characters decoded and those left upper-cased. A URL the standard
/// calls invalid has a ``rejection``. Other schemes keep their bytes: the scheme and the host of
/// a `//` authority are lower-cased and the fragment dropped. Text without a scheme is kept as it
/// is, less its fragment.
///
/// Works on the UTF-8 bytes: URL syntax is ASCII, so every split happens at an ASCII byte. One
/// buffer holds the canonical URL; host, path and query are ranges of it.
struct URLParts: Sendable {
    /// The canonical URL's bytes.
    var normalizedBytes: [UInt8]
    /// Where the host is in ``normalizedBytes``: no port, no IPv6 brackets.
    var hostRange = 0..<0
    /// Where the path is in ``normalizedBytes`` (empty when the URL has none).
    var pathRange = 0..<0
    /// Where the query (after `?`) is in ``normalizedBytes``.
    var queryRange = 0..<0
    /// The user info (`user:password`, without `@`) as written; empty when there is none.
    var userinfo: [UInt8] = []
    /// The explicit port when it is not the scheme's default.
    var port: Int?
    /// Why the URL is invalid, when it is.
    var rejection: URLRejection?
    /// What canonicalizing changed.
    var changes: URLChanges = []
    /// Whether the scheme is one the URL Standard treats as special (http, https, ws, wss, ftp).
    var isSpecial = false
    /// How many bytes the scheme has (0: the text has none).
    var schemeLength = 0

    init(_ url: String) {
        if let parts = Self.lightlyCanonicalized(url) {
            self = parts
        } else {
            self.init(bytes: Array(url.utf8))
        }
    }

    /// The parts of `url` by the full parse, whatever the URL: the reference the one-pass copy
    /// (``lightlyCanonicalized(_:)``) is tested against.
    static func fullyParsed(_ url: String) -> URLParts {
        URLParts(bytes: Array(url.utf8))
    }

    var normalized: String { String(decoding: normalizedBytes, as: UTF8.self) }
    var host: String { String(decoding: normalizedBytes[hostRange], as: UTF8.self) }

    /// The path rules with `field=path` see: `/` when the URL has none, as on the request line.
    var requestPathBytes: ArraySlice<UInt8> {
        pathRange.isEmpty ? [UInt8(ascii: "/")][...] : normalizedBytes[pathRange]
    }

    // MARK: Splitting

    private init(bytes raw: [UInt8]) {
        var changes: URLChanges = []
        var bytes = raw
        // Leading and trailing C0 controls and spaces, and every tab and newline.
        var start = 0
        var end = bytes.count
        while start < end, bytes[start] <= 0x20 { start += 1 }
        while end > start, bytes[end - 1] <= 0x20 { end -= 1 }
        if start > 0 || end < bytes.count || bytes.contains(where: Self.isTabOrNewline) {
            bytes = bytes[start..<end].filter { !Self.isTabOrNewline($0) }
            changes.insert(.whitespaceRemoved)
        }
        normalizedBytes = []
        guard let colon = Self.schemeEnd(bytes) else {
            // No scheme: the text as written, less its fragment.
            let end = bytes.firstIndex(of: UInt8(ascii: "#")) ?? bytes.count
            normalizedBytes = Array(bytes[..<end])
            self.changes = changes
            return
        }
        schemeLength = colon
        var scheme = Array(bytes[..<colon])
        for index in scheme.indices where scheme[index] &- UInt8(ascii: "A") < 26 {
            scheme[index] |= 0x20
            changes.insert(.schemeLowerCased)
        }
        guard let defaultPort = Self.defaultPort(ofSpecialScheme: scheme) else {
            self.changes = changes
            parseCustom(scheme: scheme, rest: bytes[(colon + 1)...])
            return
        }
        isSpecial = true
        self.changes = changes
        parseSpecial(scheme: scheme, defaultPort: defaultPort, rest: bytes[(colon + 1)...])
    }

    /// The default port of a special scheme (lower-case), or nil for any other scheme.
    private static func defaultPort(ofSpecialScheme scheme: [UInt8]) -> Int? {
        switch scheme.count {
        case 2: scheme == Array("ws".utf8) ? 80 : nil
        case 3: scheme == Array("wss".utf8) ? 443 : scheme == Array("ftp".utf8) ? 21 : nil
        case 4: scheme == Array("http".utf8) ? 80 : nil
        case 5: scheme == Array("https".utf8) ? 443 : nil
        default: nil
        }
    }

    private static func isTabOrNewline(_ byte: UInt8) -> Bool {
        byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    /// Where the scheme's `:` is, when `bytes` starts with a scheme (a letter, then letters,
    /// digits, `+`, `-`, `.`).
    private static func schemeEnd(_ bytes: [UInt8]) -> Int? {
        guard let first = bytes.first, (first | 0x20) &- UInt8(ascii: "a") < 26 else { return nil }
        for index in 1..<bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: ":") { return index }
            guard
                (byte | 0x20) &- UInt8(ascii: "a") < 26 || byte &- UInt8(ascii: "0") < 10 || byte == UInt8(ascii: "+")
                    || byte == UInt8(ascii: "-") || byte == UInt8(ascii: ".")
            else { return nil }
        }
        return nil
    }

    /// A custom scheme's URL: its bytes, the scheme and the host of a `//` authority lower-cased,
    /// the fragment dropped.
    private mutating func parseCustom(scheme: [UInt8], rest: ArraySlice<UInt8>) {
        let end = rest.firstIndex(of: UInt8(ascii: "#")) ?? rest.endIndex
        if end < rest.endIndex { changes.insert(.fragmentRemoved) }
        var output = scheme
        output.append(UInt8(ascii: ":"))
        let body = rest[..<end]
        var pathStart = output.count
        if body.starts(with: [UInt8(ascii: "/"), UInt8(ascii: "/")]) {
            output.append(contentsOf: [UInt8(ascii: "/"), UInt8(ascii: "/")])
            let authorityStart = body.startIndex + 2
            let authorityEnd =
                body[authorityStart...].firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") }
                ?? body.endIndex
            let authority = body[authorityStart..<authorityEnd]
            var hostStart = authority.startIndex
            if let at = authority.lastIndex(of: UInt8(ascii: "@")) {
                userinfo = Array(authority[..<at])
                hostStart = at + 1
            }
            var hostEnd = authority.endIndex
            if authority[hostStart...].first != UInt8(ascii: "["),
                let colon = authority[hostStart...].lastIndex(of: UInt8(ascii: ":"))
            {
                hostEnd = colon
            }
            output.append(contentsOf: authority[authority.startIndex..<hostStart])
            let lowerStart = output.count
            for byte in authority[hostStart..<hostEnd] {
                output.append(byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte)
            }
            var range = lowerStart..<output.count
            if range.count >= 2, output[range.lowerBound] == UInt8(ascii: "["),
                output[range.upperBound - 1] == UInt8(ascii: "]")
            {
                range = (range.lowerBound + 1)..<(range.upperBound - 1)
            }
            hostRange = range
            output.append(contentsOf: authority[hostEnd...])
            pathStart = output.count
            output.append(contentsOf: body[authorityEnd...])
        } else {
            output.append(contentsOf: body)
        }
        let question = output[pathStart...].firstIndex(of: UInt8(ascii: "?"))
        pathRange = pathStart..<(question ?? output.count)
        queryRange = question.map { ($0 + 1)..<output.count } ?? output.count..<output.count
        normalizedBytes = output
    }

    /// Splits and canonicalizes the rest of a special scheme's URL, after `scheme:`.
    private mutating func parseSpecial(scheme: [UInt8], defaultPort: Int, rest: ArraySlice<UInt8>) {
        var index = rest.startIndex
        var slashes = 0
        while index < rest.endIndex, rest[index] == UInt8(ascii: "/") || rest[index] == UInt8(ascii: "\\") {
            if rest[index] == UInt8(ascii: "\\") { changes.insert(.slashesFixed) }
            slashes += 1
            index += 1
        }
        if slashes != 2 { changes.insert(.slashesFixed) }
        let authorityStart = index
        while index < rest.endIndex, !Self.endsAuthority(rest[index]) { index += 1 }
        let authority = rest[authorityStart..<index]
        var hostPort = authority
        if let at = authority.lastIndex(of: UInt8(ascii: "@")) {
            userinfo = Array(authority[..<at])
            hostPort = authority[(at + 1)...]
            changes.insert(.userinfoRemoved)
        }
        // The port's `:` is the first one outside brackets.
        var inBrackets = false
        var hostEnd = hostPort.endIndex
        for position in hostPort.indices {
            let byte = hostPort[position]
            if byte == UInt8(ascii: "[") { inBrackets = true }
            if byte == UInt8(ascii: "]") { inBrackets = false }
            if byte == UInt8(ascii: ":"), !inBrackets {
                hostEnd = position
                break
            }
        }
        let hostText = hostPort[..<hostEnd]
        if hostEnd < hostPort.endIndex {
            let portText = hostPort[(hostEnd + 1)...]
            var value = 0
            for byte in portText {
                guard byte &- UInt8(ascii: "0") < 10 else {
                    rejectWithBytesAsWritten(.invalidPort(String(decoding: portText, as: UTF8.self)), scheme, rest)
                    return
                }
                value = min(value * 10 + Int(byte - UInt8(ascii: "0")), 100_000)
            }
            guard value <= 65_535 else {
                rejectWithBytesAsWritten(.invalidPort(String(decoding: portText, as: UTF8.self)), scheme, rest)
                return
            }
            if portText.isEmpty || value == defaultPort {
                changes.insert(.portRewritten)
            } else {
                port = value
                if portText.first == UInt8(ascii: "0") { changes.insert(.portRewritten) }
            }
        }
        guard !hostText.isEmpty else {
            rejectWithBytesAsWritten(.emptyHost, scheme, rest)
            return
        }
        let host: ParsedHost
        switch ParsedHost.parse(hostText, changes: &changes) {
        case .success(let parsed): host = parsed
        case .failure(let rejection):
            rejectWithBytesAsWritten(rejection, scheme, rest)
            return
        }

        var output = scheme
        output.reserveCapacity(rest.count + scheme.count + 8)
        output.append(contentsOf: "://".utf8)
        let hostStart = output.count
        switch host {
        case .domain(let name):
            var end = name.count
            while end > 1, name[end - 1] == UInt8(ascii: ".") { end -= 1 }
            if end < name.count { changes.insert(.trailingDotRemoved) }
            output.append(contentsOf: name[..<end])
            hostRange = hostStart..<output.count
        case .ipv4(let address):
            let written = ParsedHost.serialize(ipv4: address)
            if !written.elementsEqual(hostText) { changes.insert(.ipv4Rewritten) }
            output.append(contentsOf: written)
            hostRange = hostStart..<output.count
        case .ipv6(let pieces):
            if pieces[0..<5].allSatisfy({ $0 == 0 }), pieces[5] == 0xFFFF {
                changes.insert(.ipv4MappedIPv6Rewritten)
                output.append(contentsOf: ParsedHost.serialize(ipv4: UInt32(pieces[6]) << 16 | UInt32(pieces[7])))
                hostRange = hostStart..<output.count
            } else {
                let written = ParsedHost.serialize(ipv6: pieces)
                if !written.elementsEqual(hostText.dropFirst().dropLast()) { changes.insert(.ipv6Rewritten) }
                output.append(UInt8(ascii: "["))
                output.append(contentsOf: written)
                hostRange = (hostStart + 1)..<output.count
                output.append(UInt8(ascii: "]"))
            }
        }
        if let port {
            output.append(UInt8(ascii: ":"))
            output.append(contentsOf: String(port).utf8)
        }

        // Path: up to `?` or `#`.
        let pathStart = index
        while index < rest.endIndex, rest[index] != UInt8(ascii: "?"), rest[index] != UInt8(ascii: "#") { index += 1 }
        let outputPathStart = output.count
        appendPath(rest[pathStart..<index], to: &output)
        pathRange = outputPathStart..<output.count

        if index < rest.endIndex, rest[index] == UInt8(ascii: "?") {
            let queryStart = index + 1
            index = queryStart
            while index < rest.endIndex, rest[index] != UInt8(ascii: "#") { index += 1 }
            output.append(UInt8(ascii: "?"))
            let outputQueryStart = output.count
            appendEscaped(rest[queryStart..<index], to: &output, isQuery: true)
            queryRange = outputQueryStart..<output.count
        } else {
            queryRange = output.count..<output.count
        }
        if index < rest.endIndex { changes.insert(.fragmentRemoved) }
        normalizedBytes = output
    }

    /// Marks the URL invalid; its bytes stay as written (scheme lower-cased) for messages.
    private mutating func rejectWithBytesAsWritten(
        _ rejection: URLRejection, _ scheme: [UInt8], _ rest: ArraySlice<UInt8>
    ) {
        self.rejection = rejection
        normalizedBytes = scheme + [UInt8(ascii: ":")] + Array(rest)
        hostRange = 0..<0
        pathRange = 0..<0
        queryRange = normalizedBytes.count..<normalizedBytes.count
    }

    private static func endsAuthority(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "/") || byte == UInt8(ascii: "\\") || byte == UInt8(ascii: "?")
            || byte == UInt8(ascii: "#")
    }

    /// Appends the canonical path of `path` (from its first `/` or `\`, or empty): segments split
    /// at `/` and `\`, each escaped, `.` and `..` (also as `%2e`) resolved, then empty segments
    /// other than the last dropped (repeated slashes merged).
    private mutating func appendPath(_ path: ArraySlice<UInt8>, to output: inout [UInt8]) {
        // Ranges of `path`, not slices: a slice holds a reference to the buffer.
        var segments: [Range<Int>] = []
        var index = path.startIndex
        if index < path.endIndex { index += 1 }  // the leading `/` or `\`
        var hasBackslash = false
        while true {
            let segmentStart = index
            while index < path.endIndex, path[index] != UInt8(ascii: "/"), path[index] != UInt8(ascii: "\\") {
                index += 1
            }
            let segment = segmentStart..<index
            let isLast = index == path.endIndex
            if !isLast, path[index] == UInt8(ascii: "\\") { hasBackslash = true }
            switch Self.dotSegment(path[segment]) {
            case 2:
                changes.insert(.dotSegmentsResolved)
                if !segments.isEmpty { segments.removeLast() }
                if isLast { segments.append(index..<index) }
            case 1:
                changes.insert(.dotSegmentsResolved)
                if isLast { segments.append(index..<index) }
            default:
                segments.append(segment)
            }
            if isLast { break }
            index += 1
        }
        if hasBackslash { changes.insert(.slashesFixed) }
        for (position, segment) in segments.enumerated() {
            if segment.isEmpty, position != segments.count - 1 {
                changes.insert(.slashesMerged)
                continue
            }
            output.append(UInt8(ascii: "/"))
            appendEscaped(path[segment], to: &output, isQuery: false)
        }
    }

    /// 1 for `.` or `%2e`, 2 for `..` in any of its spellings, else 0.
    private static func dotSegment(_ segment: ArraySlice<UInt8>) -> Int {
        var dots = 0
        var index = segment.startIndex
        while index < segment.endIndex {
            if segment[index] == UInt8(ascii: ".") {
                index += 1
            } else if segment[index] == UInt8(ascii: "%"), segment.endIndex - index >= 3,
                segment[index + 1] == UInt8(ascii: "2"),
                segment[index + 2] | 0x20 == UInt8(ascii: "e")
            {
                index += 3
            } else {
                return 0
            }
            dots += 1
            if dots > 2 { return 0 }
        }
        return dots
    }

    /// Appends `bytes` escaped as the URL Standard escapes a path segment or a special URL's query,
    /// with escapes of unreserved characters decoded and the others' hex digits upper-cased.
    private mutating func appendEscaped(_ bytes: ArraySlice<UInt8>, to output: inout [UInt8], isQuery: Bool) {
        // Bytes kept as they are, other than `%`: bit n of the first word is byte n, of the second
        // byte 64 + n.
        let kept = isQuery ? Self.keptInQuery : Self.keptInPath
        var index = bytes.startIndex
        while index < bytes.endIndex {
            // A run of bytes kept as they are goes in whole.
            let runStart = index
            while index < bytes.endIndex, bytes[index] < 0x80,
                (bytes[index] < 64 ? kept.low >> bytes[index] : kept.high >> (bytes[index] &- 64)) & 1 == 1
            {
                index += 1
            }
            if index > runStart { output.append(contentsOf: bytes[runStart..<index]) }
            guard index < bytes.endIndex else { break }
            let byte = bytes[index]
            if let decoded = percentEscapedByte(in: bytes, at: index) {
                if Self.isUnreserved(decoded) {
                    output.append(decoded)
                    changes.insert(.unreservedDecoded)
                } else {
                    // Hex digits of 0x61 or more are lower-case letters.
                    if bytes[index + 1] >= UInt8(ascii: "a") || bytes[index + 2] >= UInt8(ascii: "a") {
                        changes.insert(.escapesUpperCased)
                    }
                    output.append(UInt8(ascii: "%"))
                    output.append(Self.hexDigits[Int(decoded >> 4)])
                    output.append(Self.hexDigits[Int(decoded & 15)])
                }
                index += 3
                continue
            }
            if Self.isEscaped(byte, isQuery: isQuery) {
                output.append(contentsOf: [
                    UInt8(ascii: "%"), Self.hexDigits[Int(byte >> 4)], Self.hexDigits[Int(byte & 15)],
                ])
                changes.insert(.percentEncoded)
            } else {
                output.append(byte)
            }
            index += 1
        }
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    /// The ASCII bytes a path segment (a special URL's query) keeps as they are: neither `%` nor
    /// escaped (``isEscaped(_:isQuery:)``), as bits (byte n: bit n of `low`, byte 64 + n: bit n of
    /// `high`).
    private static let keptInPath = keptBytes(isQuery: false)
    private static let keptInQuery = keptBytes(isQuery: true)

    private static func keptBytes(isQuery: Bool) -> (low: UInt64, high: UInt64) {
        var bits: (low: UInt64, high: UInt64) = (0, 0)
        for byte in UInt8(0)..<0x80 where byte != UInt8(ascii: "%") && !isEscaped(byte, isQuery: isQuery) {
            if byte < 64 { bits.low |= 1 << byte } else { bits.high |= 1 << (byte - 64) }
        }
        return bits
    }

    /// RFC 3986 unreserved: letters, digits, `-`, `.`, `_`, `~`.
    static func isUnreserved(_ byte: UInt8) -> Bool {
        (byte | 0x20) &- UInt8(ascii: "a") < 26 || byte &- UInt8(ascii: "0") < 10 || byte == UInt8(ascii: "-")
            || byte == UInt8(ascii: ".") || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "~")
    }

    /// The URL Standard's path percent-encode set, or its special-query percent-encode set.
    private static func isEscaped(_ byte: UInt8, isQuery: Bool) -> Bool {
        switch byte {
        case 0...0x20, 0x7F...0xFF, UInt8(ascii: "\""), UInt8(ascii: "#"), UInt8(ascii: "<"), UInt8(ascii: ">"):
            true
        case UInt8(ascii: "?"), UInt8(ascii: "`"), UInt8(ascii: "{"), UInt8(ascii: "}"): !isQuery
        case UInt8(ascii: "'"): isQuery
        default: false
        }
    }
}
