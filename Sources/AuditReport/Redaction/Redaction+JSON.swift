import Foundation

extension Redaction {
    /// A JSON text with the values of credential-like fields (`password`, `token`, `api_key`,
    /// `client_secret`, …) and secret-shaped strings redacted, and every other byte as it was: key
    /// order, spacing, number spellings and escapes are the text's own, so that a recording holds
    /// what the server sent but for its secrets. A string that holds JSON itself (an echo of a
    /// request body) is redacted inside. The text unchanged when it is not JSON or holds nothing to
    /// redact.
    public func redact(jsonText text: String) -> String {
        let data = Data(text.utf8)
        guard (try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed])) != nil else { return text }
        var scanner = JSONRedactionScanner(bytes: Array(data), redaction: self)
        do {
            try scanner.copyText()
        } catch {
            // Foundation read a text this scanner cannot: nothing of it may reach a recording unredacted.
            return "REDACTED-" + fingerprint(text)
        }
        guard scanner.didRedact else { return text }
        return String(decoding: scanner.output, as: UTF8.self)
    }

    /// Whether the UTF-8 bytes `text` open as a JSON object or array does, after any whitespace.
    static func opensAsJSON(_ text: some Sequence<UInt8>) -> Bool {
        let opening = text.first { !JSONRedactionScanner.isWhitespace($0) }
        return opening == UInt8(ascii: "{") || opening == UInt8(ascii: "[")
    }

    /// Whether a JSON field of this name holds a credential.
    static func isCredentialField(_ name: String) -> Bool {
        let squeezed = name.lowercased().filter { $0 != "_" && $0 != "-" }
        return credentialFields.contains(squeezed) || credentialSuffixes.contains { squeezed.hasSuffix($0) }
    }

    /// What a credential field's squeezed name may end with (`user_password`, `aws_secret_access_key`).
    private static let credentialSuffixes = [
        "password", "passphrase", "secret", "token", "apikey", "privatekey", "secretkey", "secretaccesskey",
        "signingkey", "credential",
    ]

    private static let credentialFields: Set<String> = [
        "password", "passwd", "pwd", "pass", "secret", "token", "apikey", "accesstoken", "refreshtoken", "idtoken",
        "clientsecret", "authorization", "auth", "privatekey", "sessionid", "cookie",
    ]

    /// What a JSON string value becomes, nil when it stays as it is.
    fileprivate func redacted(jsonString string: String, key: String?) -> String? {
        if let key, Self.isCredentialField(key) { return "REDACTED-" + fingerprint(string) }
        if Self.opensAsJSON(string.utf8) {
            let inner = redact(jsonText: string)
            if inner != string { return inner }
        }
        let redacted = redact(headerValue: redact(text: string), name: key ?? "")
        return redacted == string ? nil : redacted
    }
}

/// Copies a JSON text Foundation has read, value by value, replacing the values ``Redaction``
/// redacts and keeping every other byte. It never reads past the text: a text it cannot follow is
/// an error.
private struct JSONRedactionScanner {
    struct Unreadable: Error {}

    let bytes: [UInt8]
    let redaction: Redaction
    var index = 0
    var output: [UInt8] = []
    var didRedact = false

    init(bytes: [UInt8], redaction: Redaction) {
        self.bytes = bytes
        self.redaction = redaction
        output.reserveCapacity(bytes.count)
    }

    /// Copies the whole text: a byte order mark, one value, whitespace around it.
    mutating func copyText() throws(Unreadable) {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) {
            output.append(contentsOf: bytes[0..<3])
            index = 3
        }
        try copyValue(key: nil)
        guard try nextAfterWhitespace() == nil else { throw Unreadable() }
    }

    /// Copies the value at `index` (after any whitespace), a member of `key`'s (an array's
    /// elements are their array's key's).
    private mutating func copyValue(key: String?) throws(Unreadable) {
        switch try nextAfterWhitespace() {
        case UInt8(ascii: "{"):
            copyByte()
            while let next = try nextAfterWhitespace(), next != UInt8(ascii: "}") {
                if next == UInt8(ascii: ",") {
                    copyByte()
                    continue
                }
                let literal = try stringLiteral()
                let name = Self.string(bytes[literal])
                // A name that holds JSON (a form field a server made of a JSON body) is redacted inside.
                if Redaction.opensAsJSON(name.utf8),
                    case let inner = redaction.redact(jsonText: name),
                    inner != name
                {
                    append(literalOf: inner)
                } else {
                    output.append(contentsOf: bytes[literal])
                }
                guard try nextAfterWhitespace() == UInt8(ascii: ":") else { throw Unreadable() }
                copyByte()
                try copyValue(key: name)
            }
            try copyClosing()
        case UInt8(ascii: "["):
            copyByte()
            while let next = try nextAfterWhitespace(), next != UInt8(ascii: "]") {
                if next == UInt8(ascii: ",") {
                    copyByte()
                    continue
                }
                try copyValue(key: key)
            }
            try copyClosing()
        case UInt8(ascii: "\""):
            let literal = try stringLiteral()
            if let replacement = redaction.redacted(jsonString: Self.string(bytes[literal]), key: key) {
                append(literalOf: replacement)
            } else {
                output.append(contentsOf: bytes[literal])
            }
        case nil:
            throw Unreadable()
        default:
            // A number, true, false or null.
            let start = index
            while index < bytes.count, !Self.endsScalar(bytes[index]) { index += 1 }
            let token = bytes[start..<index]
            if let key, Redaction.isCredentialField(key), !token.elementsEqual("null".utf8) {
                append(literalOf: "REDACTED-" + redaction.fingerprint(String(decoding: token, as: UTF8.self)))
            } else {
                output.append(contentsOf: token)
            }
        }
    }

    /// Copies whitespace; the byte after it, nil at the end of the text.
    private mutating func nextAfterWhitespace() throws(Unreadable) -> UInt8? {
        while index < bytes.count, Self.isWhitespace(bytes[index]) { copyByte() }
        return index < bytes.count ? bytes[index] : nil
    }

    private mutating func copyByte() {
        output.append(bytes[index])
        index += 1
    }

    /// Copies the bracket that closes an object or array.
    private mutating func copyClosing() throws(Unreadable) {
        guard index < bytes.count else { throw Unreadable() }
        copyByte()
    }

    /// The string literal at `index`, quotes included; `index` moves past it.
    private mutating func stringLiteral() throws(Unreadable) -> Range<Int> {
        let start = index
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { throw Unreadable() }
        index += 1
        while index < bytes.count, bytes[index] != UInt8(ascii: "\"") {
            index += bytes[index] == UInt8(ascii: "\\") ? 2 : 1
        }
        guard index < bytes.count else { throw Unreadable() }
        index += 1
        return start..<index
    }

    /// `replacement` as a JSON string literal, escaping only what JSON requires, and noted as a redaction.
    private mutating func append(literalOf replacement: String) {
        didRedact = true
        output.append(UInt8(ascii: "\""))
        for byte in replacement.utf8 {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), byte])
            case 0x0A: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case ..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                output.append(contentsOf: Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }

    /// The string a literal (quotes included) stands for.
    private static func string(_ literal: ArraySlice<UInt8>) -> String {
        let inner = literal.dropFirst().dropLast()
        guard inner.contains(UInt8(ascii: "\\")) else { return String(decoding: inner, as: UTF8.self) }
        let decoded = try? JSONSerialization.jsonObject(with: Data(literal), options: [.fragmentsAllowed])
        return decoded as? String ?? String(decoding: inner, as: UTF8.self)
    }

    static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    private static func endsScalar(_ byte: UInt8) -> Bool {
        isWhitespace(byte) || byte == UInt8(ascii: ",") || byte == UInt8(ascii: "]") || byte == UInt8(ascii: "}")
    }
}
