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
            "https:doubleclick.net",
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
            "https://user.doubleclick.net@other.test/",
            "https://doubleclick.net@other.test/",
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
            }
        }
    }
}
