import AuditPolicy
import Foundation
import Testing

@Suite struct CacheRuleTests {
    @Test("[cache] takes ttl=, offline and private, and a matching rule never changes the verdict")
    func settings() throws {
        let policy = try Policy(
            parsing: #"""
                [cache] ttl=10m offline private
                docs ^https://docs\.test/
                [block]
                secret ^https://docs\.test/secret
                """#, file: "speed.rules")
        let open = policy.verdict("https://docs.test/a")
        #expect(open.action == .pass)
        #expect(open.cacheRule?.id == "speed/docs")
        #expect(
            open.cacheRule?.cacheSettings
                == CacheSettings(
                    timeToLive: .seconds(600), servesOffline: true,
                    storesPrivateRequests: true))
        #expect(open.recorded.isEmpty)
        let blocked = policy.verdict("https://docs.test/secret")
        #expect(blocked.action == .block)
        #expect(blocked.rule?.id == "speed/secret")
    }

    @Test("a bare [cache] keeps the RFC's freshness, stores no private request, and serves nothing offline")
    func defaults() throws {
        let policy = try Policy(parsing: "[cache]\nall ^https?://\n", file: "speed.rules")
        #expect(policy.verdict("http://a.test/").cacheRule?.cacheSettings == CacheSettings())
    }

    @Test("the matching cache rule of highest priority wins, then the earliest")
    func precedence() throws {
        let policy = try Policy(
            parsing: #"""
                [cache] ttl=1m
                first ^https://a\.test/
                second ^https://a\.test/x
                [cache] ttl=1h priority=5
                urgent ^https://a\.test/x/y
                """#, file: "speed.rules")
        #expect(policy.verdict("https://a.test/").cacheRule?.id == "speed/first")
        #expect(policy.verdict("https://a.test/x").cacheRule?.id == "speed/first")
        #expect(policy.verdict("https://a.test/x/y").cacheRule?.id == "speed/urgent")
    }

    @Test(
        "durations take s, m, h, d and w units, combined and with fractions as Go writes them, or plain seconds",
        arguments: [
            ("90", 90), ("90s", 90), ("10m", 600), ("2h", 7_200), ("7d", 604_800), ("0", 0), ("2w", 1_209_600),
            ("1h30m", 5_400), ("1.5h", 5_400), ("1d12h", 129_600), ("2m30s", 150), ("0.5s", 1), ("1m0s", 60),
        ])
    func durations(text: String, seconds: Int) throws {
        let policy = try Policy(parsing: "[cache] ttl=\(text)\nall ^https?://\n", file: "speed.rules")
        #expect(policy.verdict("https://a.test/").cacheRule?.cacheSettings?.timeToLiveSeconds == seconds)
    }

    @Test(
        "a bad ttl is an error at its value's column",
        arguments: ["10y", "m", "-5s", ".5h", "1.h", "1h30", "h1", "1hh", "1H", "1e3s", "99999999999d", "5300w"])
    func badDuration(text: String) {
        let found = diagnostics(of: "[cache] ttl=\(text)\nall ^https?://\n")
        #expect(found.map(\.location.column) == [13])
        #expect(found.first?.message == "ttl must be a duration such as 90s, 10m, 2h, 7d or 1h30m, found '\(text)'")
    }

    @Test("cache options on another action, and a value given to a flag, are errors at the option")
    func misplacedOptions() {
        let onBlock = MarkedSource("[block] 1️⃣offline\nx ^https://a\\.test/\n")
        #expect(
            diagnostics(of: onBlock.text).map(\.message) == [
                "option 'offline' applies to cache sections only (found on block)"
            ])
        #expect(diagnostics(of: onBlock.text).map(\.location.column) == [onBlock.column])
        let valued = MarkedSource("[cache] 1️⃣private=yes\nx ^https://a\\.test/\n")
        #expect(
            diagnostics(of: valued.text).map(\.message) == ["option 'private' takes no value (write it alone: private)"]
        )
        #expect(diagnostics(of: valued.text).map(\.location.column) == [valued.column])
        #expect(
            diagnostics(of: "[cache] ttl\nx ^https://a\\.test/\n").map(\.message) == [
                "option 'ttl' needs a value (key=value)"
            ])
    }

    @Test(
        "a cache rule applies to GET and HEAD only: another method has no cache rule",
        arguments: [("GET", true), ("HEAD", true), ("POST", false), ("PUT", false), ("DELETE", false)])
    func cacheableMethods(method: String, hasCacheRule: Bool) throws {
        let policy = try Policy(parsing: "[cache]\ndocs ^https://docs\\.test/\n", file: "speed.rules")
        #expect((policy.verdict("https://docs.test/a", method: method).cacheRule?.id == "speed/docs") == hasCacheRule)
    }

    @Test("methods= on a cache section narrows it to GET or HEAD; another method is an error at the option's value")
    func cacheMethodsOption() throws {
        let policy = try Policy(parsing: "[cache] methods=HEAD\ndocs ^https://docs\\.test/\n", file: "speed.rules")
        #expect(policy.verdict("https://docs.test/a", method: "HEAD").cacheRule?.id == "speed/docs")
        #expect(policy.verdict("https://docs.test/a", method: "GET").cacheRule == nil)
        let posted = MarkedSource("[cache] methods=1️⃣GET,post,PUT\nx ^https://a\\.test/\n")
        #expect(
            diagnostics(of: posted.text).map(\.message) == [
                "a cache rule keeps responses to GET and HEAD only (found POST, PUT in methods)"
            ])
        #expect(diagnostics(of: posted.text).map(\.location.column) == [posted.column])
    }

    @Test("a .test case 'cache RULE URL' passes when that rule is the request's cache rule")
    func testCases() throws {
        let policy = try Policy(parsing: "[cache]\ndocs ^https://docs\\.test/\n", file: "speed.rules")
        let report = policy.runTests([
            PolicySource(
                file: "speed.test",
                bytes: Array(
                    """
                    cache speed/docs https://docs.test/a
                    cache speed/docs https://other.test/
                    cache speed/docs POST https://docs.test/a

                    """.utf8))
        ])
        #expect(report.results.map(\.isPassing) == [true, false, false])
        #expect(report.results.map(\.actual).suffix(2) == ["no cache rule", "no cache rule"])
        #expect(report.unexercisedRules.isEmpty)
    }

    @Test("a cache rule that can match a host makes its tunnels intercepted, so its HTTPS responses can be kept")
    func interception() throws {
        let policy = try Policy(parsing: "[cache]\ndocs ^https://docs\\.test/\n", file: "speed.rules")
        #expect(policy.decidesBeyondOrigin("https://docs.test/", host: "docs.test"))
        #expect(!policy.decidesBeyondOrigin("https://other.test/", host: "other.test"))
    }
}
