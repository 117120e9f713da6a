import Foundation
import Testing

@Suite struct CheckCommandTests {
    let policies = repositoryRoot.appendingPathComponent("policies").path

    @Test("check --json prints one object per URL with the documented keys in order")
    func jsonLines() {
        let run = runInProcess([
            "check", "--policies", policies, "--json",
            "https://www.rivalshop.com/cart", "https://search.rival.com/search?q=shoes", "https://example.org/",
        ])
        #expect(run.exitCode == 0)
        #expect(run.standardError == "")
        #expect(
            run.outputLines == [
                #"{"url":"https://www.rivalshop.com/cart","method":"GET","verdict":"block","rule":"competitor/rival-shop","message":"Competitor storefront","redirect":null,"response":null,"recorded":[],"cache":null,"errors":[]}"#,
                #"{"url":"https://search.rival.com/search?q=shoes","method":"GET","verdict":"redirect","rule":"competitor/rival-search","message":"Use the company search engine","redirect":"https://search.example.com/?q=shoes","response":null,"recorded":[],"cache":null,"errors":[]}"#,
                #"{"url":"https://example.org/","method":"GET","verdict":"pass","rule":null,"message":null,"redirect":null,"response":null,"recorded":[],"cache":null,"errors":[]}"#,
            ])
    }

    @Test("check prints verdict, method, URL and only the fields that apply")
    func textLines() {
        let run = runInProcess([
            "check", "--policies", policies, "--method", "post", "-H", "Content-Length: 2000000",
            "https://api.example.com/v1/items", "https://api.rival.com/v2/orders",
        ])
        #expect(
            run.outputLines == [
                "pass     POST https://api.example.com/v1/items  recorded=statistics/api-calls,statistics/large-upload-post,statistics/state-changing",
                #"block    POST https://api.rival.com/v2/orders  rule=competitor/rival-api-write  message="No writes to competitor APIs"  recorded=statistics/api-calls,statistics/large-upload-post,statistics/state-changing"#,
            ])
    }

    @Test("check names the cache rule whose responses a request's would be kept by, in text and JSON")
    func cacheRule() throws {
        let folder = try TemporaryFolder(["speed.rules": "[cache] ttl=1h\ndocs ^https://docs\\.test/\n"])
        let text = runInProcess(["check", "--policies", folder.path, "https://docs.test/a", "https://other.test/"])
        #expect(
            text.outputLines == [
                "pass     GET https://docs.test/a  cache=speed/docs", "pass     GET https://other.test/",
            ])
        let json = runInProcess([
            "check", "--policies", folder.path, "--json", "--method", "POST", "https://docs.test/a",
        ])
        #expect(
            json.outputLines.first?.contains(#""recorded":[],"cache":null,"errors""#) == true, "\(json.outputLines)")
        let got = runInProcess(["check", "--policies", folder.path, "--json", "https://docs.test/a"])
        #expect(got.outputLines.first?.contains(#""recorded":[],"cache":"speed/docs","errors""#) == true)
    }

    @Test("a URL argument is read without the spaces and control characters around it, as a line of input is")
    func argumentTrimmed() {
        let run = runInProcess([
            "check", "--policies", policies, "  https://www.rivalshop.com/cart\r\n", "\thttps://example.com/ ",
        ])
        #expect(run.exitCode == 0, "\(run.standardError)")
        #expect(
            run.outputLines.map { $0.split(separator: " ").prefix(3).joined(separator: " ") } == [
                "block GET https://www.rivalshop.com/cart", "pass GET https://example.com/",
            ])
    }

    @Test("a failing match is reported with the rule, and --on-error pass ignores the rule")
    func matchErrors() throws {
        let folder = try TemporaryFolder(["slow.rules": "[allow]\nnested ^https://x\\.test/(\\w+\\.?)+\\.example$"])
        // The URL carries the token "example", so the index cannot rule the pattern out; PCRE2 runs and gives up.
        let url = "https://x.test/" + String(repeating: "a", count: 3_000) + ".example!"
        let closed = runInProcess(["check", "--policies", folder.path, "--json", url])
        #expect(closed.standardOutput.contains(#""verdict":"block","rule":"slow/nested""#))
        #expect(
            closed.standardOutput.contains(
                #""errors":["slow/nested: match limit exceeded (pattern backtracks too much on this input)"]"#))
        let open = runInProcess(["check", "--policies", folder.path, "--on-error", "pass", url])
        #expect(open.standardOutput.hasPrefix("pass     GET https://x.test/"))
        #expect(open.standardOutput.contains("errors=\"slow/nested: match limit exceeded"))
    }

    @Test("a policy with errors prints them all on stderr and exits 1")
    func invalidPolicy() throws {
        let folder = try TemporaryFolder(["bad.rules": "[blok]\nr x\n[block] priority=high\ns ^("])
        let run = runInProcess(["check", "--policies", folder.path, "https://a.test/"])
        #expect(run.exitCode == 1)
        #expect(run.standardOutput == "")
        #expect(
            run.standardError == """
                \(folder.path)/bad.rules:1:2: error: unknown action 'blok' (expected block, redirect, respond, warn, allow, record, cache)
                \(folder.path)/bad.rules:3:18: error: priority must be an integer, found 'high'
                \(folder.path)/bad.rules:4:5: error: invalid pattern: missing closing parenthesis

                """)
    }

    @Test("a bad method or header is a usage error (exit 64)")
    func usageErrors() {
        #expect(runInProcess(["check", "--policies", policies, "--method", "GE T", "https://a.test/"]).exitCode == 64)
        #expect(runInProcess(["check", "--policies", policies, "-H", "novalue", "https://a.test/"]).exitCode == 64)
        #expect(
            runInProcess(["check", "--policies", policies, "--on-error", "maybe", "https://a.test/"]).exitCode == 64)
    }

    @Test(
        "a usage error found while a subcommand runs shows that subcommand's usage, as one found while parsing does",
        arguments: [
            (
                ["check", "--policies", "policies", "--method", "GE T", "https://a.test/"], "invalid method 'GE T'",
                "audit check [--policies <policies>] [--method <method>] [--header <header> ...] [--json] [--explain] "
                    + "[--on-error <on-error>] [<urls> ...]", "audit check"
            ),
            (
                ["cache", "purge", "--cache-dir", "policies", "("],
                "--cache-dir: 'policies' is not a cache folder "
                    + "(it has no entries/)", "audit cache purge [--cache-dir <cache-dir>] [<pattern>]",
                "audit cache purge"
            ),
        ])
    func usageOfTheSubcommand(_ arguments: [String], error: String, usage: String, command: String) throws {
        let run = try runBinary(arguments)
        #expect(run.exitCode == 64)
        #expect(
            run.standardError
                == "Error: \(error)\nUsage: \(usage)\n  See '\(command) --help' for more information.\n")
    }

    @Test("the built binary reads 'METHOD URL' lines from stdin when given no URL")
    func binaryReadsStdin() throws {
        let run = try runBinary(["check"], input: "https://www.rivalshop.com/cart\nDELETE https://api.rival.com/x\n\n")
        #expect(run.exitCode == 0)
        #expect(
            run.outputLines == [
                #"block    GET https://www.rivalshop.com/cart  rule=competitor/rival-shop  message="Competitor storefront""#,
                #"block    DELETE https://api.rival.com/x  rule=competitor/rival-api-write  message="No writes to competitor APIs"  recorded=statistics/state-changing"#,
            ])
    }

    @Test(
        "a URL without a scheme is refused with the URL it was likely meant to be (exit 64), not passed",
        arguments: [
            ("www.rivalshop.com/cart", "https://www.rivalshop.com/cart"), ("//a.test/x", "https://a.test/x"),
            ("localhost:8080/admin", "https://localhost:8080/admin"), ("127.0.0.1:8080", "https://127.0.0.1:8080"),
            ("example.com:443", "https://example.com:443"),
        ])
    func urlWithoutScheme(_ url: String, _ guess: String) {
        let run = runInProcess(["check", url])
        #expect(run.exitCode == 64)
        #expect(
            run.standardError.hasPrefix(
                "Error: '\(url)' is not an absolute URL: it has no scheme (\(guess)?)\n"))
        #expect(run.standardOutput == "")
    }

    @Test(
        "URLs of any scheme are decided, custom ones included", arguments: ["app://local/x", "ftp://x/", "urn:isbn:1"])
    func anyScheme(_ url: String) {
        let run = runInProcess(["check", url])
        #expect(run.exitCode == 0)
        #expect(run.outputLines == ["pass     GET \(url)"])
    }

    @Test("standard input skips comments and blank lines; a line that is no request is reported at its column, exit 1")
    func stdinProblems() throws {
        let run = try runBinary(
            ["check", "--method", "HEAD"],
            input: """
                # competitors
                https://www.rivalshop.com/cart

                DELETE https://api.rival.com/x
                GET https://a.test/ extra
                www.rivalshop.com/cart
                P@ST https://a.test/
                app://local/x
                """)
        #expect(run.exitCode == 1)
        #expect(
            run.outputLines == [
                #"block    HEAD https://www.rivalshop.com/cart  rule=competitor/rival-shop  message="Competitor storefront""#,
                #"block    DELETE https://api.rival.com/x  rule=competitor/rival-api-write  message="No writes to competitor APIs"  recorded=statistics/state-changing"#,
                "pass     HEAD app://local/x",
            ])
        #expect(
            run.standardError == """
                <stdin>:5:21: error: unexpected 'extra' (expected '[METHOD] URL')
                <stdin>:6:1: error: 'www.rivalshop.com/cart' is not an absolute URL: it has no scheme \
                (https://www.rivalshop.com/cart?)
                <stdin>:7:1: error: invalid method 'P@ST'

                """)
    }
}
