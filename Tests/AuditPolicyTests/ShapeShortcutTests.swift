import AuditPolicy
import AuditRegex
import Testing

/// Rules whose pattern's shape answers without PCRE2 (literals a match needs, runs of a class,
/// anchored starts and ends, "contains none of" lookaheads) must give the verdicts PCRE2 gives:
/// generated patterns of each shape against generated URLs, with Unicode case folding in both.
@Suite struct ShapeShortcutTests {
    typealias Generator = IndexDifferentialTests.Generator

    static let literals = [
        "ads", "cdn", "js", "com", "google", "statically.io", "k", "s", "sk", "kit", "ſtatic", "\u{212A}it", "x.y",
        "01", "php", "gif", "track", "CDN", "a|b",
    ]

    /// One pattern of a shape a shortcut answers.
    static func pattern(_ random: inout Generator) -> String {
        func literal() -> String {
            let word = random.pick(literals)
            return word == "a|b" ? "a\\|b" : word.replacingOccurrences(of: ".", with: random.chance(50) ? "." : "\\.")
        }
        func alternation() -> String {
            (0..<(1 + random.below(4))).map { _ in literal() }.joined(separator: "|")
        }
        let classes = [
            "[a-z0-9]", "[a-zA-Z0-9]", "[0-9a-f]", "\\d", "[a-z]", "\\w", "[^/]", "[A-Z]", "[ſk]", "[^\\W]",
            "[[:alpha:]]",
            "\\p{L}", "\\X", ".",
        ]
        func quantifier() -> String {
            random.pick(["{\(1 + random.below(5)),}", "*", "+", "{2,\(2 + random.below(4))}", "?"])
                + random.pick(["", "", "?", "+"])
        }
        func backtracking() -> String { random.pick(["*", "+", "{2,}", "{1,3}", "?", "*?"]) }
        switch random.below(29) {
        case 0: return "^(?!.*(\(alternation()))).*$"
        case 1: return "^(?!.*(?:\(alternation())))" + random.pick(["", ".*", ".*$", "[\\s\\S]*"])
        case 2: return "(?:\(alternation()))\\/(?!\(literal())).*"
        case 3: return "\(random.pick(classes)){\(3 + random.below(30)),}.\(literal())"
        case 4:
            return String(repeating: random.pick(classes), count: 3 + random.below(12))
                + random.pick(["", "$", "\\.js"])
        case 5: return "\\/\(random.pick(classes)){\(1 + random.below(6))}$"
        case 6: return "^https?:\\/\\/\(random.pick(classes)){\(2 + random.below(8))}\\.(?:\(alternation()))"
        case 7: return "^https:\\/\\/" + literal() + random.pick(["", "\\/", "(?!.*(\(alternation()))).*$"])
        case 8: return "(\(alternation()))\\.\(random.pick(classes))+$"
        case 9: return "\(random.pick(classes)){\(4 + random.below(10)),}\\.(com|info|xyz)"
        case 10: return "(?i)" + literal() + "[\\s\\S]*" + literal()
        case 11: return "\(random.pick(classes))\(quantifier())\(random.pick([".", "\\."]))\(literal())"
        case 12: return "\(literal())\(random.pick(classes))\(quantifier())" + random.pick(["", "$"])
        case 13:
            return "\(random.pick(["", "^"]))\(literal())(\(alternation()))\(random.pick(classes)){2}(\(alternation()))"
        case 14: return "\(literal())\\/\(random.pick(classes))|^\(literal())|\(literal())$"
        case 15: return "(?>\(random.pick(classes))+)\(literal())"
        case 16:
            return
                "\(literal())\(random.pick(classes))\(backtracking())\(random.pick(["", "\\."]))(\(alternation()))\\/"
        case 17:
            return "^https?:\\/\\/(\(random.pick(classes))+\\/){\(1 + random.below(4)),}\(random.pick(classes))+"
                + random.pick(["", "$"])
        case 18: return "(?:\(alternation()))\\/(?!\(alternation()))" + random.pick(["", ".*", ".*$"])
        case 19: return "\(literal())(\(random.pick(classes)){2,4}|\(literal()))\(literal())"
        case 20:
            let body =
                random.pick(classes) + random.pick(["+", "*", "{2,}"]) + random.pick(["\\/", "\\.", "-", "k"])
                + random.pick(["", literal()])
            return random.pick(["", "^https?:\\/\\/"]) + "(\(body)){\(random.below(3)),}" + random.pick(classes)
                + random.pick(["+$", "+", literal()])
        case 21:
            return "\(literal())\\/(?!\(alternation()))\(random.pick(classes))\(quantifier())\\.\(literal())"
                + random.pick(["", "$"])
        case 22:
            return "^https?:\\/\\/\(random.pick(classes)){2,8}\\.(?=\(random.pick(classes)){0,5}"
                + random.pick(["\\d", "[A-Z]", "\\.", literal()]) + ")\(random.pick(classes))+\\/"
        case 23:
            return random.pick(["\\b", "(?<=\\/)", "(?<!\\.)", "(?=\(literal()))"]) + literal()
                + random.pick(["\\b", "(?!\(literal()))", ""]) + random.pick(classes) + random.pick(["+", "{2}"])
        case 24:
            return "\(literal())\\/\(random.pick(classes)){\(1 + random.below(3)),\(3 + random.below(3))}"
                + random.pick([
                    "(?:\\?[_v]=\\d+)?", "(\(alternation()))?", "((\(literal())|\\d)?\\.\(literal()))?", "(?:-\\d*)?",
                ])
                + "$"
        case 25:
            return "^(?:" + random.pick(["https?", "\(alternation())", "(?:https?:)?"]) + ")"
                + random.pick(["?", ""]) + random.pick([":\\/\\/", ""]) + "(?=[a-z]*\\d)"
                + random.pick(classes) + "+\\.\(literal())"
        case 26:
            let many = (0..<(8 + random.below(6))).map { _ in literal() + random.pick([".", "\\.", ""]) + literal() }
            return "^(?!.*(" + many.joined(separator: "|") + ")).*$"
        case 27:
            return random.pick(["\\/", "-", "="]) + random.pick([".", random.pick(classes)]) + "{\(random.below(6))}"
                + random.pick(["\\/", "\\.", "="]) + random.pick(["", literal()])
        default: return "^(?!.*\(literal())).*\(random.pick(["", "\\d$", literal()]))"
        }
    }

    /// A URL of printable ASCII mostly, sometimes with folding characters, other non-ASCII text or
    /// control characters, which shortcuts leave to PCRE2.
    static func url(_ random: inout Generator) -> String {
        let pieces = [
            "ads", "cdn", "js", "com", "google", "statically", "io", "kit", "SK", "01", "php", "gif", "track",
            "0123456789abcdef0123456789abcdef", "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef", "12345", "x", "a|b", "static",
        ]
        var url = random.pick(["https://", "http://", "HTTPS://"])
        url += (0..<(1 + random.below(3))).map { _ in random.pick(pieces) }.joined(separator: ".")
        url += random.pick([".com", ".info", ".xyz", ".io", ""])
        for _ in 0..<random.below(5) {
            url += random.pick(["/", "/", ".", "-", "?q=", "&"]) + random.pick(pieces)
            if random.chance(5) { url += random.pick(["\u{212A}", "\u{17F}", "é", "%0A", "\t"]) }
        }
        if random.chance(10) { url += random.pick(["/", "/123", "/1234567", ".js", ".gif"]) }
        if random.chance(10) { url += random.pick(["?v=12", "?_=3", "-", "-7", ".1.js", "?v="]) }
        return url
    }

    static func policy(seed: UInt64, rules count: Int) throws -> Policy {
        var random = Generator(state: seed)
        var text = ""
        for number in 0..<count {
            if number % 40 == 0 {
                let action = random.pick(["block", "allow", "warn", "record"])
                let field = random.pick(["url", "url", "url", "host", "path", "header:x-test"])
                let caseOption = random.pick(["insensitive", "sensitive"])
                text += "[\(action)] field=\(field) case=\(caseOption) priority=\(random.below(3))\n"
            }
            var pattern = pattern(&random)
            while (try? Pattern(pattern)) == nil { pattern = Self.pattern(&random) }
            text += "r\(number) \(pattern)\n"
        }
        return try Policy(parsing: text, file: "shapes.rules")
    }

    @Test("rules answered by their shape give the verdicts PCRE2 gives", arguments: [1 as UInt64, 2, 3, 4])
    func sameVerdicts(seed: UInt64) throws {
        let policy = try Self.policy(seed: seed, rules: 400)
        #expect(policy.indexStatistics.byShape > 100)
        var random = Generator(state: seed &* 104_729)
        for _ in 0..<2_000 {
            let request = AuditRequest(
                method: random.pick(["GET", "POST"]), url: Self.url(&random),
                headers: random.chance(50) ? [.init(name: "X-Test", value: Self.url(&random))] : [])
            #expect(policy.evaluate(request) == policy.evaluateEveryRule(request), "\(request.url)")
        }
    }

    @Test(
        "a 'contains none of' lookahead is answered for URLs with and without the literals",
        arguments: [
            ("https://example.com/a.js", true),
            ("https://cdn.statically.io/x.js", false),
            ("https://STATICALLY-IO.example/", false),
            ("https://static.example/Google.com", false),
            ("https://static.example/googlexcom", true),
            ("https://static.example/goo", true),
        ])
    func containsNoneOf(url: String, matches: Bool) throws {
        let policy = try Policy(
            parsing: "[block]\nonly ^(?!.*(statically.io|google\\.com)).*$\n", file: "none.rules")
        #expect(policy.indexStatistics.byShape == 1)
        let verdict = policy.evaluate(AuditRequest(url: url))
        #expect(verdict.action == (matches ? .block : .pass))
        #expect(verdict == policy.evaluateEveryRule(AuditRequest(url: url)))
    }

    @Test(
        "a 'contains none of' lookahead over fixed-length alternatives is answered both ways without PCRE2",
        arguments: [
            ("https://example.com/", true),
            ("https://www.google.com/search", false),
            ("https://googleXcom.test/", true),
            ("https://cdn.statically-io.test/", false),
        ])
    func exactContainsNoneOf(url: String, matches: Bool) throws {
        let policy = try Policy(
            parsing: "[block]\nonly ^(?!.*(statically.io|google\\.com)).*$\n", file: "none.rules")
        let request = AuditRequest(url: url)
        // A rule the shape rules out is no candidate; one it says matches is.
        #expect(policy.candidateRules(for: request).map(\.id) == (matches ? ["none/only"] : []))
        #expect(policy.evaluate(request).action == (matches ? .block : .pass))
        #expect(policy.evaluate(request) == policy.evaluateEveryRule(request))
    }

    @Test(
        "literal alternatives are searched for with the literal text around them",
        arguments: [
            ("https://shop.example.org/co/x", false),
            ("https://a.co/x", true),
            ("https://a.CLUB/", true),
            ("https://a.club.example/", false),
        ])
    func literalAlternativesInContext(url: String, isCandidate: Bool) throws {
        let policy = try Policy(parsing: "[block]\ntld ^https?:\\/\\/.*\\.(club|com|co)\\/.*\n", file: "tld.rules")
        #expect(policy.indexStatistics.byShape == 1)
        let request = AuditRequest(url: url)
        #expect(policy.candidateRules(for: request).map(\.id) == (isCandidate ? ["tld/tld"] : []))
        #expect(policy.evaluate(request) == policy.evaluateEveryRule(request))
    }

    @Test(
        "caseless letters match their Unicode folds, which shortcuts leave to PCRE2",
        arguments: [
            ("[a-z]{5,}\\.js", "app://a.test/\u{212A}\u{212A}\u{212A}\u{212A}\u{212A}.js"),
            ("kit[0-9]{3}", "app://a.test/\u{212A}it123"),
            ("\u{17F}tatic", "https://static.test/"),
            ("^(?!.*(kit)).*$", "app://a.test/\u{212A}IT"),
            ("\\/sk$", "app://a.test/\u{17F}\u{212A}"),
        ])
    func unicodeFolding(pattern: String, url: String) throws {
        let policy = try Policy(parsing: "[block]\nfold \(pattern)\n", file: "fold.rules")
        let request = AuditRequest(url: url)
        #expect(policy.evaluate(request) == policy.evaluateEveryRule(request))
        #expect(policy.evaluate(request).action == (pattern.hasPrefix("^(?!") ? .pass : .block))
    }

    @Test(
        "fixed alternatives and open-ended repetitions at a pattern's edges are answered exactly",
        arguments: [
            ("[a-z0-9]{8,}\\.js", "https://a.test/abcdefgh.js", true),
            ("[a-z0-9]{8,}\\.js", "https://a.test/abcdefg.js", false),
            ("\\.(com|net)\\/[0-9]{2}", "https://a.NET/12", true),
            ("\\.(com|net)\\/[0-9]{2}", "https://a.org/12", false),
            ("cdn[0-9]+", "https://cdn7.test/", true),
            ("cdn[0-9]+", "https://cdn.test/", false),
            ("^http:|\\.exe$", "http://x.test/", true),
            ("^http:|\\.exe$", "https://x.test/a.exe", true),
            ("^http:|\\.exe$", "https://x.test/a.exe?x", false),
        ])
    func fixedAlternativesAndEdges(pattern: String, url: String, matches: Bool) throws {
        let policy = try Self.expectVerdict(of: pattern, url: url, matches: matches)
        if !matches { #expect(policy.candidateRules(for: AuditRequest(url: url)).isEmpty) }
    }

    @Test(
        "fixed sequences of single bytes and wildcards give PCRE2's verdicts, up to the subject's last bytes",
        arguments: [
            ("\\/....\\/", "https://a.test/abcd/", true),
            ("\\/....\\/", "https://a.test/abc/d/", false),
            ("\\/....\\/", "https://a.test/abcde/", false),
            ("\\/....\\/", "https://a.test/" + String(repeating: "x/", count: 40) + "wxyz/", true),
            ("\\/....\\/", "https://a.test/" + String(repeating: "x/", count: 40) + "wxyz", false),
            ("\\/[0-9]{3}=[a-z]", "https://a.test/q/123=a", true),
            ("\\/[0-9]{3}=[a-z]", "https://a.test/q/123=", false),
            ("\\/[0-9]{3}=[a-z]", "https://a.test/q/12a=b/123", false),
        ])
    func twoSingleBytes(pattern: String, url: String, matches: Bool) throws {
        try Self.expectVerdict(of: pattern, url: url, matches: matches)
    }

    static let manyNoneOf =
        "^(?!.*(statically.io|bunnycdn.ru|cloudflare.com|disqus.com|dmca.com|fbcdn.net|github.io|google.com"
        + "|gstatic.com|jquery.com|vk.com|yandex.|player|youtube.com)).*$"

    @Test(
        "a 'contains none of' lookahead of many texts, some with a wildcard, gives PCRE2's verdicts",
        arguments: [
            ("https://example.org/a.js", true),
            ("https://www.google.com/x", false),
            ("https://www.google.org/com", true),
            ("https://GOOGLE-COM.example/", false),
            ("https://a.test/?u=vk.com&p=1", false),
            ("https://a.test/yandex", true),
            ("https://a.test/yandex/", false),
            ("https://a.test/PLAYER", false),
            ("https://cdn.statically.io.test/", false),
            ("https://cdn.staticallyXio/", false),
            ("https://cdn.statically/io/", false),
            ("https://cdn.statically.i/o", true),
        ])
    func manyTextsNoneOf(url: String, matches: Bool) throws {
        try Self.expectVerdict(of: Self.manyNoneOf, url: url, matches: matches)
    }

    static let optionalTail = "^https?:\\/\\/[a-z]+\\.[a-z]{2,4}\\/(?=[a-z]*\\d)[a-z0-9]+\\/\\d{4,5}(?:\\?[_v]=\\d+)?$"
    static let optionalHead = "^(?:h|ft)[a-z]*:\\/\\/(?>[a-z0-9]+)\\.com\\/"

    @Test(
        "an optional tail before `$`, or a choice after `^`, still rules out subjects by their last or first byte",
        arguments: [
            (optionalTail, "https://a.test/ab1/1234", true),
            (optionalTail, "https://a.test/ab1/12345?v=56", true),
            (optionalTail, "https://a.test/ab1/1234?_=7", true),
            (optionalTail, "https://a.test/ab1/1234?v=5x", false),
            (optionalTail, "https://a.test/ab1/1234/", false),
            (optionalTail, "https://a.test/ab1/1234?v=", false),
            (optionalHead, "https://ab1.com/", true),
            (optionalHead, "FTP://ab1.com/", true),
            (optionalHead, "wss://ab1.com/", false),
            (optionalHead, "xhttps://ab1.com/", false),
        ])
    func optionalEdges(pattern: String, url: String, matches: Bool) throws {
        let policy = try Self.expectVerdict(of: pattern, url: url, matches: matches)
        let lastOrFirst = pattern.hasSuffix("$") ? url.last : url.first
        if !matches, let lastOrFirst, !"0123456789hHfF".contains(lastOrFirst) {
            #expect(policy.candidateRules(for: AuditRequest(url: url)).isEmpty)
        }
    }

    /// Checks that a one-rule policy of `pattern` blocks `url` exactly when `matches`, as matching
    /// every rule in turn does, and that the rule has a shape shortcut.
    @discardableResult
    static func expectVerdict(of pattern: String, url: String, matches: Bool) throws -> Policy {
        let policy = try Policy(parsing: "[block]\nrule \(pattern)\n", file: "shape.rules")
        #expect(policy.indexStatistics.byShape == 1)
        let request = AuditRequest(url: url)
        #expect(policy.evaluate(request).action == (matches ? .block : .pass))
        #expect(policy.evaluate(request) == policy.evaluateEveryRule(request))
        return policy
    }

    @Test(
        "patterns PCRE2 would backtrack through are answered in one pass, as PCRE2 answers them",
        arguments: [
            (":\\/\\/[^\\s]+(.club|.com)\\/", "https://shop.example.com/cart", true),
            (":\\/\\/[^\\s]+(.club|.com)\\/", "https://shop.example.org/cart", false),
            (":\\/\\/[^\\s]+(.club|.com)\\/", "https://shop.example.com:8080", false),
            ("^https?:\\/\\/[^\\/]+\\/[a-z]+\\/\\d+$", "https://a.test/b/12", true),
            ("^https?:\\/\\/[^\\/]+\\/[a-z]+\\/\\d+$", "https://a.test/b/c/12", false),
            ("^https?:\\/\\/[^\\/]+\\/[a-z]+\\/\\d+$", "https://a.test/b/12x", false),
            ("(?:com|net)\\/(?!shrinker).*", "https://a.com/shrinker/b", false),
            ("(?:com|net)\\/(?!shrinker).*", "https://a.com/shrinker/b.net/x", true),
            ("(?:com|net)\\/(?!shrinker).*", "https://a.net/", true),
            ("(?i)\\.(COM|ru)\\/[a-z0-9]+\\/[a-z0-9]+$", "https://A.Com/Ab/12", true),
            ("(?i)\\.(COM|ru)\\/[a-z0-9]+\\/[a-z0-9]+$", "https://a.com/ab/12/", false),
        ])
    func onePass(pattern: String, url: String, matches: Bool) throws {
        try Self.expectVerdict(of: pattern, url: url, matches: matches)
    }

    @Test(
        "a pattern whose backtracking can grow exponentially is left to PCRE2, match-limit failure and all",
        arguments: ["k(.{2,4}|js)+CDN", "k([a-z]+[a-z])+CDN", "k([a-z]+\\.?)+CDN"])
    func exponentialBacktracking(pattern: String) throws {
        let policy = try Policy(parsing: "[block]\nnested \(pattern)\n", file: "nested.rules")
        // The rule's literals are there, so it is matched, and no `cdn` follows the `k`.
        let request = AuditRequest(url: "https://cdn.test/k" + String(repeating: "abcdefghin", count: 6))
        let verdict = policy.evaluate(request)
        #expect(verdict == policy.evaluateEveryRule(request))
        #expect(verdict.action == .block)
        #expect(verdict.errors.map(\.ruleID) == ["nested/nested"])
    }

    @Test(
        "an opening repetition that is possessive or atomic is left to PCRE2",
        arguments: [
            ("[a-z]{3,}z", true), ("[a-z]{3,}?z", true), ("[a-z]{3,}+z", false), ("(?>[a-z]{3,})z", false),
        ])
    func atomicOpening(pattern: String, matches: Bool) throws {
        // Where `[a-z]{3,}` takes all of `abcz`, only backtracking leaves the `z` for the pattern's end.
        let policy = try Policy(parsing: "[block]\nrun \(pattern)\n", file: "run.rules")
        let request = AuditRequest(url: "https://abcz.test/")
        #expect(policy.evaluate(request).action == (matches ? .block : .pass))
        #expect(policy.evaluate(request) == policy.evaluateEveryRule(request))
    }

    @Test(
        "a run of letters and digits longer than the URL's longest is ruled out, and one as long is found",
        arguments: [
            ("[a-z0-9]{12,}", "https://a.test/abcdef123456/x", true),
            ("[a-z0-9]{12,}", "https://a.test/abcdef12345/x", false),
            // The URL's longest run of letters and digits is long enough; the class's is not.
            ("[0-9a-f]{12,}", "https://a.test/0123456789gh/x", false),
            ("[0-9a-f]{12,}", "https://a.test/0123456789ab/x", true),
            ("\\/[0-9a-f]{8}\\.js", "https://a.test/x/0123abcd.js", true),
            ("\\/[0-9a-f]{8}\\.js", "https://a.test/x/0123abc.js", false),
            ("^https:\\/\\/[a-z]{6}\\.", "https://abcdef.test/", true),
            ("^https:\\/\\/[a-z]{6}\\.", "https://abcde.test/abcdefgh", false),
        ])
    func alphanumericRuns(pattern: String, url: String, matches: Bool) throws {
        try Self.expectVerdict(of: pattern, url: url, matches: matches)
    }

    @Test("a shape that needs a character outside ASCII never matches an ASCII URL")
    func nonASCIINeeded() throws {
        let policy = try Policy(parsing: "[block]\naccent [éü]{2,}\n", file: "accent.rules")
        #expect(policy.indexStatistics.byShape == 1)
        #expect(policy.evaluate(AuditRequest(url: "https://cafe.test/caf")).action == .pass)
        #expect(policy.evaluate(AuditRequest(url: "app://cafe.test/caféé")).action == .block)
    }
}
