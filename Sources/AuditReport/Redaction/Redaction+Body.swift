import Foundation

extension Redaction {
    /// A body of `type` with its secrets hidden: a multipart form's fields in its bytes (its files
    /// may be any bytes), a JSON body's credential fields and secret-shaped strings, a URL-encoded
    /// form's parameters as a URL's are; any other body as it is. A body that opens as JSON does is
    /// read as JSON whatever its type says (`curl --data '{…}'` calls it a form).
    public func redact(body: [UInt8], type: String) -> [UInt8] {
        let essence = Self.essence(of: type)
        if essence == "multipart/form-data", let boundary = Self.multipartBoundary(of: type) {
            return redact(multipartBody: body, boundary: boundary)
        }
        let isJSON = Self.opensAsJSON(body) || essence == "application/json" || essence.hasSuffix("+json")
        guard isJSON || essence == "application/x-www-form-urlencoded",
            let text = String(validating: body, as: UTF8.self)
        else { return body }
        return Array((isJSON ? redact(jsonText: text) : redact(formBody: text)).utf8)
    }

    /// A request body sent with the `Content-Type` `type` with its secrets hidden (``redact(body:type:)``);
    /// one sent without a type is redacted as the form Foundation and curl (libcurl) send it as.
    public func redact(requestBody body: [UInt8], type: String?) -> [UInt8] {
        redact(body: body, type: type ?? "application/x-www-form-urlencoded")
    }

    /// `bytes` with the fingerprint of every hidden value taken out (`REDACTED-` and eight hex
    /// digits become `REDACTED`): what a redacted text says whatever key hid its secrets. A replay
    /// matches requests on it, so a recording needs no key, and holds nothing on which a guessed
    /// secret could be confirmed.
    public static func withoutFingerprints(_ bytes: [UInt8]) -> [UInt8] {
        let prefix = Array("\(hiddenValue)-".utf8)
        var output: [UInt8] = []
        var copied = 0
        var index = 0
        while let found = bytes[index...].firstRange(of: prefix) {
            let end = found.upperBound + 8
            guard end <= bytes.count, bytes[found.upperBound..<end].allSatisfy(Self.isFingerprintDigit) else {
                index = found.upperBound
                continue
            }
            output.append(contentsOf: bytes[copied..<(found.upperBound - 1)])
            copied = end
            index = end
        }
        guard copied > 0 else { return bytes }
        output.append(contentsOf: bytes[copied...])
        return output
    }

    /// `text` with the fingerprint of every hidden value taken out (see ``withoutFingerprints(_:)-([UInt8])``).
    public static func withoutFingerprints(_ text: String) -> String {
        let bytes = Array(text.utf8)
        let output = withoutFingerprints(bytes)
        return output.count == bytes.count ? text : String(decoding: output, as: UTF8.self)
    }

    /// Whether `byte` is one of a fingerprint's digits (lower-case hex).
    static func isFingerprintDigit(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x61...0x66).contains(byte)
    }

    /// A content type's type and subtype, lower-cased, without parameters.
    static func essence(of type: String) -> String {
        type.split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() } ?? ""
    }
}
