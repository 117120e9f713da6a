import AuditPolicy
import Testing

/// Host rules in the ad-block form (`||ads.example.com^`) are found through the tokens of the URL's
/// authority alone: the same words in a path, query or fragment do not make them run, and every
/// spelling of a URL that PCRE2 matches still finds them.
@Suite struct HostKeyTests {
    static let hostRule = #"^[a-z][a-z0-9+.-]*:/+(?:[^/?#]*\.)?doubleclick\.net(?:[^a-z0-9_.%-]|$)"#

    static func policy() throws -> Policy {
        try Policy(parsing: "[block]\nhost \(hostRule)\n[warn]\npath /doubleclick/\n", file: "ads.rules")
    }

    @Test("a host rule is filed by the host alone, a path rule is not")
    func statistics() throws {
        let statistics = try Self.policy().indexStatistics
        #expect(statistics.byToken == 2)
        #expect(statistics.inHost == 1)
        #expect(statistics.busiestKeys.map(\.key).sorted() == ["doubleclick", "host:doubleclick"])
    }

    @Test(
        "the host's words elsewhere in the URL do not make the host rule run",
        arguments: [
            "https://news.test/?ref=doubleclick.net",
            "https://news.test/doubleclick.net/x",
            "https://news.test#doubleclick.net",
            "doubleclick.net/x",
            "//doubleclick.net/x",
            "https://user.doubleclick.net@other.test/",
            "https://doubleclick.net@other.test/",
        ])
    func elsewhereIsNoCandidate(url: String) throws {
        let policy = try Self.policy()
        let request = AuditRequest(url: url)
        #expect(!policy.candidateRules(for: request).map(\.id).contains("ads/host"))
        #expect(policy.evaluate(request) == policy.evaluateEveryRule(request))
    }

    @Test(
        "every spelling of an authority that PCRE2 matches finds the host rule",
        arguments: [
            "https://doubleclick.net/x",
            "HTTPS://ADS.DOUBLECLICK.NET/x",
            "https://doubleclick.net:443/x",
            "http://ads.doubleclick.net:8080?q",
            "http:/doubleclick.net",
            "svn+ssh:///g.doubleclick.net#top",
            "https://user:secret@ads.doubleclick.net/",
            "https:doubleclick.net",
            "https:\\\\doubleclick.net.",
            "https://%64oubleclick.net/",
        ])
    func authoritySpellingsMatch(url: String) throws {
        let policy = try Self.policy()
        let request = AuditRequest(url: url)
        #expect(policy.candidateRules(for: request).map(\.id).contains("ads/host"))
        let verdict = policy.evaluate(request)
        #expect(verdict.rule?.id == "ads/host")
        #expect(verdict == policy.evaluateEveryRule(request))
    }

    @Test("a pair of host tokens is looked up among neighbours in the authority only")
    func pairsInTheAuthority() throws {
        // 300 hosts xI.yJ: each token is shared by 15 or 20 rules, so most are filed by their pair.
        var text = "[block]\n"
        for first in 0..<20 {
            for second in 0..<15 {
                text += #"r\#(first)-\#(second) ^[a-z][a-z0-9+.-]*:/+(?:[^/?#]*\.)?x\#(first)\.y\#(second)\.test"#
                text += "(?:[^a-z0-9_.%-]|$)\n"
            }
        }
        let policy = try Policy(parsing: text, file: "pairs.rules")
        #expect(policy.indexStatistics.byTokenPair > 100)
        #expect(policy.indexStatistics.inHost == 300)
        for first in 0..<20 {
            for second in 0..<15 {
                let inHost = AuditRequest(url: "https://a.x\(first).y\(second).test/p")
                #expect(policy.candidateRules(for: inHost).map(\.id) == ["pairs/r\(first)-\(second)"])
                #expect(policy.evaluate(inHost).rule?.id == "pairs/r\(first)-\(second)")
                let inPath = AuditRequest(url: "https://a.other/x\(first).y\(second).test/p")
                #expect(policy.candidateRules(for: inPath).isEmpty)
                #expect(policy.evaluate(inPath) == policy.evaluateEveryRule(inPath))
                // The pair's first token ends the authority, its second begins the path or query.
                for end in ["/", "?", "#"] {
                    let across = AuditRequest(url: "https://a.x\(first)\(end)y\(second).test")
                    #expect(policy.candidateRules(for: across).isEmpty, "\(across.url)")
                }
            }
        }
    }
}

/// A whole token of a literal run is filed with the bytes the run has around it, and a rule runs
/// only when the request has the same bytes around that token.
@Suite struct TokenContextTests {
    static func policy() throws -> Policy {
        var text = "[block]\n"
        for (number, (before, after)) in [("_", "-"), ("-", "_"), ("/", "."), (".", "/"), ("=", "&")].enumerated() {
            text += "size\(number) \\\(before)160x600\\\(after)\n"
        }
        text += "either (?:_ads-|\\.ads\\.)\n"
        text += "port \\.examplecorp\\/x\n"
        return try Policy(parsing: text, file: "sizes.rules")
    }

    @Test(
        "only the rules whose bytes around the token the request has run",
        arguments: [
            ("https://a.test/ad_160x600-b.gif", ["sizes/size0"]),
            ("https://a.test/ad-160x600_b.gif", ["sizes/size1"]),
            ("https://a.test/ad/160x600.gif", ["sizes/size2"]),
            ("https://a.test/?w=160x600&h=1", ["sizes/size4"]),
            ("https://a.test/160x600", []),
        ])
    func contextNarrowsCandidates(url: String, expected: [String]) throws {
        let policy = try Self.policy()
        let request = AuditRequest(url: url)
        #expect(policy.candidateRules(for: request).map(\.id) == expected)
        #expect(policy.evaluate(request) == policy.evaluateEveryRule(request))
        #expect(policy.evaluate(request).rule?.id == expected.first)
    }

    @Test("a rule with its token twice runs for either occurrence's bytes")
    func tokenTwice() throws {
        let policy = try Self.policy()
        for url in ["https://a.test/x_ads-y", "https://a.test/x.ads.y"] {
            #expect(policy.evaluate(AuditRequest(url: url)).rule?.id == "sizes/either", "\(url)")
        }
        #expect(policy.evaluate(AuditRequest(url: "https://a.test/x-ads_y")).rule == nil)
    }

    @Test("a default port in the URL does not hide the byte after the host that normalizing brings")
    func defaultPort() throws {
        let policy = try Self.policy()
        for url in ["https://a.examplecorp:443/x", "http://A.EXAMPLECORP:80/x", "https://a.examplecorp/x"] {
            #expect(policy.evaluate(AuditRequest(url: url)).rule?.id == "sizes/port", "\(url)")
        }
        #expect(policy.evaluate(AuditRequest(url: "https://a.examplecorp:8443/x")).rule == nil)
    }
}
