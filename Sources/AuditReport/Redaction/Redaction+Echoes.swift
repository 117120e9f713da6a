import Foundation

extension Redaction {
    /// The parts of `headers` that are secrets of their own, beyond the values this redaction
    /// hides (each cookie's value is one of those): a `Basic` credential's `user:password` and
    /// password, as an echo of the request would show them.
    func basicCredentialParts(of headers: [RequestSnapshot.Header]) -> Set<String> {
        var parts: Set<String> = []
        for header in headers {
            if let scheme = Self.authScheme(of: header.value), scheme.lowercased() == "basic",
                let decoded = Data(base64Encoded: String(header.value.dropFirst(scheme.count + 1))),
                let credential = String(data: decoded, encoding: .utf8)
            {
                parts.insert(credential)
                if let colon = credential.firstIndex(of: ":") { parts.insert(String(credential[colon...].dropFirst())) }
            }
        }
        return parts
    }

    /// The length of the shortest secret hidden wherever it appears: a shorter value (a cookie's
    /// `dark`, a user name) would hide ordinary words.
    static let shortestEcho = 6

    /// `bytes` with every occurrence of each of `secrets` at least ``shortestEcho`` bytes long
    /// hidden (the longest first), as this redaction hides the secret where a rule names it; a
    /// secret hidden in a URL also as its escapes decode (`a%2Fb` echoed as `a/b`).
    func hidingEchoes(of secrets: Set<String>, in bytes: [UInt8]) -> [UInt8] {
        var output = bytes
        let decoded = secrets.compactMap { $0.contains("%") ? $0.removingPercentEncoding : nil }
        let needles = secrets.union(decoded).map { Array($0.utf8) }.filter { $0.count >= Self.shortestEcho }
        for needle in needles.sorted(by: { $0.count > $1.count }) {
            var spans: [Range<Int>] = []
            var index = 0
            while let found = output[index...].firstRange(of: needle) {
                spans.append(found)
                index = found.upperBound
            }
            if !spans.isEmpty { output = hiding(spans, of: output) }
        }
        return output
    }
}
