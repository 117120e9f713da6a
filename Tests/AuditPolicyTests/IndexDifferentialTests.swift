import AuditPolicy
import AuditRegex
import Testing

/// The index must never change a verdict: these tests generate thousands of patterns and URLs and
/// compare the indexed evaluation with matching every rule in turn.
@Suite struct IndexDifferentialTests {
    /// SplitMix64: the same sequence on every run, so a failure can be reproduced.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var value = state
            value = (value ^ (value >> 30)) &* 0xBF58_476D_1CE4_E5B9
            value = (value ^ (value >> 27)) &* 0x94D0_49BB_1331_11EB
            return value ^ (value >> 31)
        }
        mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
        mutating func pick<T>(_ items: [T]) -> T { items[below(items.count)] }
        mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
    }

    static let words = [
        "ads", "track", "pixel", "doubleclick", "cdn", "x", "a1", "k", "s", "kit", "sk", "go", "img", "banner",
        "login", "api", "v2", "com", "net", "example", "shop", "tracker", "ad", "stats", "js", "abc123", "q",
    ]

    /// One piece of a generated pattern.
    static func piece(_ random: inout Generator) -> String {
        let word = random.pick(words)
        switch random.below(26) {
        case 0...5: return word
        case 6: return "\\." + word
        case 7: return word.uppercased()
        case 8: return "/" + word + "/"
        case 9: return "[a-z]+"
        case 10: return "[^/]*"
        case 11: return "\\d{1,3}"
        case 12: return "(?:\(word)|\(random.pick(words)))"
        case 13: return "(\(word))?"
        case 14: return "(?=.*\(word))"
        case 15: return "(?!\(word))"
        case 16: return "(\\w+)\\.\\1"
        case 17: return ".*"
        case 18: return "\\b" + word + "\\b"
        case 19: return "[^a-z0-9_.%-]"
        case 20: return "(?:[^a-z0-9_.%-]|$)"
        case 21: return "\\Q\(word).\\E"
        case 22: return "\u{212A}" + word  // Kelvin sign: matches k caselessly
        case 23: return "[\(word)]{2}"
        case 24: return "(?<!\(word))" + random.pick(words)
        default: return "\\w*" + word + "\\W"
        }
    }

    static func pattern(_ random: inout Generator) -> String {
        var text = ""
        if random.chance(20) { text += "^https?://(?:[^/?#]*\\.)?" }
        // The ad-block host opening, whose host tokens are looked up in the authority only.
        if random.chance(20) { text += "^[a-z][a-z0-9+.-]*:/+(?:[^/?#]*\\.)?" }
        if random.chance(5) { text = "(?i)" + text }
        for _ in 0..<(1 + random.below(3)) { text += piece(&random) }
        if random.chance(15) { text += "$" }
        if random.chance(10) { text += "|" + piece(&random) }
        return text
    }

    static func url(_ random: inout Generator) -> String {
        var host = (0..<(1 + random.below(3))).map { _ in random.pick(words) }.joined(separator: ".")
        if random.chance(20) { host = host.uppercased() }
        var path = (0..<random.below(4)).map { _ in
            random.pick(words) + (random.chance(30) ? "\(random.below(999))" : "")
        }
        .joined(separator: random.pick(["/", "-", "_", "."]))
        if random.chance(5) { path += "\u{212A}it" }  // Kelvin sign standing in for k
        if random.chance(5) { path += "ma\u{17F}k" }  // long s standing in for s
        if random.chance(5) { path += "%2Fads%00" }
        if random.chance(10) { path = path.uppercased() }
        if random.chance(5) { host = random.pick(words) + "." + random.pick(words) + "@" + host }
        var url =
            random.pick(["https", "http", "HTTP", "wss"]) + random.pick(["://", "://", "://", ":/", ":///"]) + host
        if random.chance(3) { url = random.pick(["//", "", "1x:/", "é:/"]) + host }
        if random.chance(10) { url += random.pick([":8080", ":443", ":80"]) }
        url += "/" + path
        if random.chance(40) { url += "?" + random.pick(words) + "=" + random.pick(words) }
        if random.chance(10) { url += "#" + random.pick(words) }
        return url
    }

    static func policy(seed: UInt64, rules count: Int, urlOnly: Bool = false) throws -> Policy {
        var random = Generator(state: seed)
        var text = ""
        for number in 0..<count {
            if number % 50 == 0 {
                let action = random.pick(["block", "allow", "warn", "record", "block", "cache"])
                let field =
                    urlOnly ? "url" : random.pick(["url", "url", "url", "host", "path", "query", "header:x-test"])
                let caseOption = random.pick(["insensitive", "sensitive"])
                text += "[\(action)] field=\(field) case=\(caseOption) priority=\(random.below(3))\n"
            }
            var pattern = pattern(&random)
            // Skip the rare generated pattern PCRE2 rejects (e.g. a quantified lookbehind).
            while (try? Pattern(pattern)) == nil { pattern = Self.pattern(&random) }
            text += "r\(number) \(pattern)\n"
        }
        return try Policy(parsing: text, file: "generated.rules")
    }

    @Test("indexed and exhaustive evaluation give the same verdicts", arguments: [1 as UInt64, 2, 3])
    func sameVerdicts(seed: UInt64) throws {
        let policy = try Self.policy(seed: seed, rules: 1_500)
        var random = Generator(state: seed &* 7919)
        for _ in 0..<1_500 {
            let request = AuditRequest(
                method: "GET", url: Self.url(&random),
                headers: random.chance(50) ? [.init(name: "X-Test", value: Self.url(&random))] : [])
            let indexed = policy.evaluate(request)
            let exhaustive = policy.evaluateEveryRule(request)
            #expect(indexed == exhaustive, "\(request.url)")
        }
    }

    @Test("a field with enough rules to be filed in slices on every core gives the same verdicts")
    func slicedFilingSameVerdicts() throws {
        let policy = try Self.policy(seed: 9, rules: 5_000, urlOnly: true)
        var random = Generator(state: 99)
        for _ in 0..<300 {
            let request = AuditRequest(url: Self.url(&random))
            #expect(policy.evaluate(request) == policy.evaluateEveryRule(request), "\(request.url)")
        }
    }

    @Test(
        "rules under busy keys and token pairs, each checked for its confirmation tokens, are matched exactly",
        arguments: [
            (queryPairs: 1, requests: 1_500),
            // More than 64 tokens: their confirmation questions are answered by a Bloom filter.
            (queryPairs: 40, requests: 300),
        ])
    func busyKeysWithConfirmations(queryPairs: Int, requests: Int) throws {
        var random = Generator(state: 2026)
        // Twelve octets for 3,000 addresses: each octet is shared by hundreds of rules, each pair of
        // neighbouring octets by dozens.
        let octets = (0..<12).map { _ in String(random.below(256)) }
        func address() -> String { (0..<4).map { _ in random.pick(octets) }.joined(separator: ".") }
        var text = "[record]\n"
        var addresses: [String] = []
        for number in 0..<3_000 {
            let ip = address()
            addresses.append(ip)
            text += "ip\(number) ^https?://\(ip.replacingOccurrences(of: ".", with: "\\."))(?:[:/?#]|$)\n"
        }
        let policy = try Policy(parsing: text, file: "danger.rules")
        #expect(policy.indexStatistics.byTokenPair > 2_000)
        #expect((policy.indexStatistics.busiestKeys.first?.rules ?? 0) > 20)
        var matched = 0
        for _ in 0..<requests {
            let host = random.chance(50) ? random.pick(addresses) : address()
            let query = (0..<queryPairs).map { _ in "\(random.pick(octets))=\(random.pick(octets))" }
            let request = AuditRequest(url: "http://\(host)/p?\(query.joined(separator: "&"))")
            let verdict = policy.evaluate(request)
            matched += verdict.recorded.count
            #expect(verdict == policy.evaluateEveryRule(request), "\(request.url)")
        }
        #expect(matched > requests * 45 / 100)  // half the requests carry a rule's address
    }

    @Test("a pair of tokens around a default port is found, since normalizing drops the port between them")
    func pairAcrossDefaultPort() throws {
        // 400 rules over 20 hosts and 20 paths: each path token is shared by 20 rules, so about
        // half of them are filed by the pair (cdn, xN), which only the normalized URL has side by side.
        var text = "[block]\n"
        for host in 10..<30 {
            for path in 0..<20 {
                text += "r\(host)-\(path) ^https?://s\(host)[^/]*\\.cdn/x\(path)(?:[/?]|$)\n"
            }
        }
        let policy = try Policy(parsing: text, file: "pairs.rules")
        #expect(policy.indexStatistics.byTokenPair > 50)
        for (scheme, port) in [("http", ":80"), ("https", ":443"), ("http", ""), ("https", ":8443"), ("http", ":")] {
            for host in 10..<30 {
                for path in 0..<20 {
                    let request = AuditRequest(url: "\(scheme)://s\(host).cdn\(port)/x\(path)?q=1")
                    let verdict = policy.evaluate(request)
                    #expect(verdict == policy.evaluateEveryRule(request), "\(request.url)")
                    #expect(verdict.rule?.id == (port == ":8443" ? nil : "pairs/r\(host)-\(path)"), "\(request.url)")
                }
            }
        }
    }

    @Test("every rule that matches a request is among the index's candidates")
    func candidatesCoverEveryMatch() throws {
        let policy = try Self.policy(seed: 42, rules: 1_000)
        var random = Generator(state: 4242)
        var matches = 0
        for _ in 0..<800 {
            let request = AuditRequest(url: Self.url(&random))
            let candidates = Set(policy.candidateRules(for: request).map(\.id))
            for rule in policy.rules where rule.field == .url {
                guard (try? rule.pattern.matches(request.normalizedURL)) == true else { continue }
                matches += 1
                #expect(candidates.contains(rule.id), "\(rule.id) \(rule.pattern.source) on \(request.url)")
            }
        }
        #expect(matches > 1_000)  // the generator really produces matches
    }

    @Test("a request runs only the rules whose tokens it carries")
    func indexNarrowsTheCandidates() throws {
        var text = "[block]\n"
        for number in 0..<1_000 {
            text += "host\(number) ^https?://(?:[^/?#]*\\.)?tracker\(number)\\.example(?:[^a-z0-9_.%-]|$)\n"
            text += "path\(number) /banner\(number)/\n"
        }
        let policy = try Policy(parsing: text, file: "narrow.rules")
        let candidates = policy.candidateRules(for: AuditRequest(url: "https://cdn.tracker17.example/banner42/x.gif"))
        #expect(candidates.map(\.id).sorted() == ["narrow/host17", "narrow/path42"])
        #expect(policy.indexStatistics.alwaysRun == 0)
        #expect(policy.indexStatistics.byToken == 2_000)
    }
}
