/// A URL split the way policies see it, without Foundation's rewriting: only the scheme and host
/// are changed (lower-cased) and the default port dropped; everything else is kept as sent.
///
/// Works on the UTF-8 bytes: URL syntax is ASCII, so every split happens at an ASCII byte. One
/// buffer holds the normalized URL; host, path and query are ranges of it.
struct URLParts: Sendable {
    /// The normalized URL's bytes.
    let normalizedBytes: [UInt8]
    /// Where the host is in ``normalizedBytes``: lower-cased, no port, no IPv6 brackets.
    let hostRange: Range<Int>
    /// Where the path is in ``normalizedBytes`` (empty when the URL has none).
    let pathRange: Range<Int>
    /// Where the query (after `?`) is in ``normalizedBytes``.
    let queryRange: Range<Int>

    init(_ url: String) {
        var url = url
        self = url.withUTF8 { URLParts(bytes: $0) }
    }

    private init(bytes all: UnsafeBufferPointer<UInt8>) {
        let bytes = UnsafeBufferPointer(rebasing: all[..<(all.firstIndex(of: UInt8(ascii: "#")) ?? all.count)])
        guard let separator = Self.firstSchemeSeparator(in: bytes), Self.isScheme(bytes[..<separator]) else {
            normalizedBytes = Array(bytes)
            hostRange = 0..<0
            pathRange = 0..<0
            queryRange = 0..<0
            return
        }
        let restStart = separator + 3
        var authorityEnd = restStart
        while authorityEnd < bytes.count, bytes[authorityEnd] != UInt8(ascii: "/"),
            bytes[authorityEnd] != UInt8(ascii: "?")
        {
            authorityEnd += 1
        }
        var hostStart = restStart
        if let at = bytes[restStart..<authorityEnd].lastIndex(of: UInt8(ascii: "@")) { hostStart = at + 1 }
        var hostEnd = authorityEnd
        var portStart = authorityEnd
        if hostStart < authorityEnd, bytes[hostStart] == UInt8(ascii: "["),
            let close = bytes[hostStart..<authorityEnd].firstIndex(of: UInt8(ascii: "]"))
        {
            hostEnd = close + 1
            if hostEnd < authorityEnd, bytes[hostEnd] == UInt8(ascii: ":") { portStart = hostEnd + 1 }
        } else if let colon = bytes[hostStart..<authorityEnd].lastIndex(of: UInt8(ascii: ":")) {
            hostEnd = colon
            portStart = colon + 1
        }

        var normalized: [UInt8] = []
        normalized.reserveCapacity(bytes.count)
        for byte in bytes[..<separator] { normalized.append(Self.lowered(byte)) }
        normalized.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[separator..<hostStart]))
        let lowerHostStart = normalized.count
        Self.appendLowercased(UnsafeBufferPointer(rebasing: bytes[hostStart..<hostEnd]), to: &normalized)
        let lowerHostEnd = normalized.count
        let port = UnsafeBufferPointer(rebasing: bytes[portStart..<authorityEnd])
        if !port.isEmpty, !Self.isDefaultPort(port, scheme: UnsafeBufferPointer(rebasing: bytes[..<separator])) {
            normalized.append(UInt8(ascii: ":"))
            normalized.append(contentsOf: port)
        }
        let pathStart = normalized.count
        normalized.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[authorityEnd...]))
        let questionMark = normalized[pathStart...].firstIndex(of: UInt8(ascii: "?"))
        pathRange = pathStart..<(questionMark ?? normalized.count)
        queryRange = questionMark.map { ($0 + 1)..<normalized.count } ?? normalized.count..<normalized.count
        if lowerHostEnd - lowerHostStart >= 2, normalized[lowerHostStart] == UInt8(ascii: "["),
            normalized[lowerHostEnd - 1] == UInt8(ascii: "]")
        {
            hostRange = (lowerHostStart + 1)..<(lowerHostEnd - 1)
        } else {
            hostRange = lowerHostStart..<lowerHostEnd
        }
        normalizedBytes = normalized
    }

    var normalized: String { String(decoding: normalizedBytes, as: UTF8.self) }
    var host: String { String(decoding: normalizedBytes[hostRange], as: UTF8.self) }

    /// The path rules with `field=path` see: `/` when the URL has none, as on the request line.
    var requestPathBytes: ArraySlice<UInt8> {
        pathRange.isEmpty ? [UInt8(ascii: "/")][...] : normalizedBytes[pathRange]
    }

    private static func isDefaultPort(_ port: UnsafeBufferPointer<UInt8>, scheme: UnsafeBufferPointer<UInt8>) -> Bool {
        let defaultPort: String
        switch String(decoding: scheme, as: UTF8.self).lowercased() {
        case "http", "ws": defaultPort = "80"
        case "https", "wss": defaultPort = "443"
        case "ftp": defaultPort = "21"
        default: return false
        }
        return port.elementsEqual(defaultPort.utf8)
    }

    private static func firstSchemeSeparator(in bytes: UnsafeBufferPointer<UInt8>) -> Int? {
        guard bytes.count >= 3 else { return nil }
        for index in 0..<(bytes.count - 2)
        where bytes[index] == UInt8(ascii: ":") && bytes[index + 1] == UInt8(ascii: "/")
            && bytes[index + 2] == UInt8(ascii: "/")
        {
            return index
        }
        return nil
    }

    private static func isScheme(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        guard let first = bytes.first, isLetter(first) else { return false }
        return bytes.allSatisfy {
            isLetter($0) || ($0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9")) || $0 == UInt8(ascii: "+")
                || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: ".")
        }
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (byte | 0x20) &- UInt8(ascii: "a") < 26 }

    private static func lowered(_ byte: UInt8) -> UInt8 { byte &- UInt8(ascii: "A") < 26 ? byte | 0x20 : byte }

    /// Lower-cases a host: ASCII by bytes, anything else by Unicode's rules as `String` does.
    private static func appendLowercased(_ bytes: UnsafeBufferPointer<UInt8>, to output: inout [UInt8]) {
        if bytes.allSatisfy({ $0 < 0x80 }) {
            for byte in bytes { output.append(lowered(byte)) }
        } else {
            output.append(contentsOf: String(decoding: bytes, as: UTF8.self).lowercased().utf8)
        }
    }
}
