import ArgumentParser
import Foundation
import RequestAudit

/// How many benchmark URLs redaction changes (its false positives, since the corpus holds ordinary
/// traffic), with samples of each change, and its cost per URL against returning the URL unchanged.
struct Redactions: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "redaction", abstract: "URLs of urls-bench.txt that redaction changes, with samples, and ns/URL.")
    @OptionGroup var options: DataOptions
    @Option(help: "Samples to print.") var samples = 40

    func run() throws {
        let urls = try BenchData(directory: options.data).lines("urls-bench.txt").prefix(options.urls)
        var redaction = Redaction.default
        redaction.fingerprintKey = Array("bench".utf8)
        var changed: [(String, String)] = []
        var baselineChanged = 0
        var runs: [(Double, Double)] = []
        for pass in 0..<5 {
            let baselineStart = now()
            for url in urls where Self.byNameOnly(url) != url { baselineChanged += pass == 0 ? 1 : 0 }
            let start = now()
            for url in urls {
                let redacted = redaction.redact(url: url)
                if pass == 0, redacted != url { changed.append((url, redacted)) }
            }
            let end = now()
            runs.append((Double(start - baselineStart), Double(end - start)))
        }
        let count = Double(max(urls.count, 1))
        let baseline = runs.map(\.0).sorted()[2] / count
        let nanoseconds = runs.map(\.1).sorted()[2] / count
        print(
            "redaction: \(changed.count) of \(urls.count) URLs change (by name only: \(baselineChanged)); "
                + "\(String(format: "%.0f", nanoseconds)) ns/URL against \(String(format: "%.0f", baseline)) ns/URL "
                + "by name only (\(String(format: "%.2f", nanoseconds / baseline))×), medians of 5")
        // What sealing the log costs its writer: lines of about the size of a record.
        let line = String(
            repeating: #"{"decision":{"verdict":"pass"},"request":{"url":"https://example.org/"}}"#, count: 7)
        var chain = LogChain()
        var sealings: [Double] = []
        for _ in 0..<5 {
            let sealStart = now()
            for _ in 0..<20_000 { _ = chain.seal(line) }
            sealings.append(Double(now() - sealStart) / 20_000)
        }
        let sealNanoseconds = sealings.sorted()[2]
        print(
            "log chain: \(String(format: "%.1f", sealNanoseconds / 1_000)) µs to seal a \(line.utf8.count)-byte line "
                + "(\(String(format: "%.0f", Double(line.utf8.count) / sealNanoseconds * 1e3)) MB/s), median of 5")
        // A browser's Cookie header: each value hidden on its own, against the same value hidden whole
        // (as a listed header such as X-Api-Key is, and as Cookie was).
        let cookies = (0..<12).map { "cookie_\($0)=\(UUID().uuidString.prefix(8 + 2 * $0))" }.joined(separator: "; ")
        var perCookie: [Double] = []
        var whole: [Double] = []
        for _ in 0..<5 {
            let wholeStart = now()
            for _ in 0..<20_000 { _ = redaction.redact(headerValue: cookies, name: "X-Api-Key") }
            let cookieStart = now()
            for _ in 0..<20_000 { _ = redaction.redact(headerValue: cookies, name: "Cookie") }
            let end = now()
            whole.append(Double(cookieStart - wholeStart) / 20_000)
            perCookie.append(Double(end - cookieStart) / 20_000)
        }
        print(
            "cookie header: \(String(format: "%.1f", perCookie.sorted()[2] / 1_000)) µs to hide 12 cookies' values one "
                + "by one (\(cookies.utf8.count) bytes), \(String(format: "%.1f", whole.sorted()[2] / 1_000)) µs to hide "
                + "the value whole, medians of 5")
        let step = max(1, changed.count / max(samples, 1))
        for (url, redacted) in stride(from: 0, to: changed.count, by: step).prefix(samples).map({ changed[$0] }) {
            print("  \(url)\n    -> \(redacted)")
        }
    }

    /// The baseline: redaction by a list of query parameter names only, as before shapes were
    /// recognised (user info and the listed names' values hidden).
    static func byNameOnly(_ url: String) -> String {
        guard url.utf8.contains(where: { $0 == UInt8(ascii: "@") || $0 == UInt8(ascii: "?") }) else { return url }
        var text = url
        if let schemeEnd = text.range(of: "://") {
            let authorityEnd = text[schemeEnd.upperBound...].firstIndex { "/?#".contains($0) } ?? text.endIndex
            let authority = text[schemeEnd.upperBound..<authorityEnd]
            if let at = authority.lastIndex(of: "@") {
                text.replaceSubrange(authority.startIndex..<at, with: "REDACTED")
            }
        }
        guard let questionMark = text.firstIndex(of: "?") else { return text }
        let queryEnd = text[questionMark...].firstIndex(of: "#") ?? text.endIndex
        let query = text[text.index(after: questionMark)..<queryEnd]
        let redacted = query.split(separator: "&", omittingEmptySubsequences: false).map { pair -> String in
            guard let equals = pair.firstIndex(of: "=") else { return String(pair) }
            let name = pair[..<equals]
            let decoded = (name.removingPercentEncoding ?? String(name)).lowercased()
            return names.contains(decoded) ? "\(name)=REDACTED" : String(pair)
        }.joined(separator: "&")
        text.replaceSubrange(text.index(after: questionMark)..<queryEnd, with: redacted)
        return text
    }

    private static let names: Set<String> = [
        "token", "access_token", "refresh_token", "id_token", "auth", "password", "passwd", "pwd", "key", "api_key",
        "apikey", "secret", "client_secret", "signature", "sig",
    ]
}
