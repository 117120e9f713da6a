/// Whether text given as a URL (an argument of `audit check`, a line of a request list, a case of
/// a `.test` file) names a scheme, without which no `https?://` rule can match it and it would pass
/// unnoticed.
public enum SchemeCheck {
    /// Why `url` is not an absolute URL, with the `https://` URL it likely meant; nil when it starts
    /// with a scheme (RFC 3986 §3.1: `http:`, `app:`, any). `localhost:8080/x` is read as a host and
    /// port, as curl reads it, not as the scheme `localhost`.
    public static func problem(in url: String) -> String? {
        let bytes = Array(url.utf8)
        func isLetter(_ byte: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte | 0x20) }
        func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }
        let missing = "'\(url)' is not an absolute URL: it has no scheme"
        guard let colon = bytes.firstIndex(of: UInt8(ascii: ":")), colon > 0, isLetter(bytes[0]),
            bytes[1..<colon].allSatisfy({ isLetter($0) || isDigit($0) || Array("+-.".utf8).contains($0) })
        else {
            return "\(missing) (\(url.hasPrefix("//") ? "https:" : "https://")\(url)?)"
        }
        let port = bytes[(colon + 1)...].prefix(while: isDigit)
        if (1...5).contains(port.count), port.endIndex == bytes.endIndex || bytes[port.endIndex] == UInt8(ascii: "/") {
            return "\(missing) (https://\(url)?)"
        }
        return nil
    }
}
