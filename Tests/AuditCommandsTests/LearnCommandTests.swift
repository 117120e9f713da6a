import Foundation
import Testing

@Suite struct LearnCommandTests {
    static let traffic = """
        https://a.example.com/home
        https://b.example.com/v1/items?id=3
        POST https://b.example.com/v1/items
        https://api.other.io/graph
        http://127.0.0.1:8080/health
        https://shop.example.co.uk/cart
        """

    @Test(
        "allowlist: a rule per host, collapsed to the registrable domain when several of its hosts were seen, then a block"
    )
    func allowlist() throws {
        let folder = try TemporaryFolder(["traffic.txt": Self.traffic])
        let run = runInProcess(["learn", folder.path + "/traffic.txt", "--out", folder.path + "/proposal"])
        let rules = try String(contentsOfFile: folder.path + "/proposal/learned.rules", encoding: .utf8)
        let ruleLines = rules.split(separator: "\n").filter { !$0.hasPrefix("#") && !$0.hasPrefix("@") }
        #expect(run.exitCode == 0)
        #expect(
            ruleLines == [
                #"[allow] message="Seen in recorded traffic""#,
                #"example-com ^https?://([a-z0-9-]+\.)*example\.com(:[0-9]+)?([/?#]|$)"#,
                #"api-other-io ^https?://api\.other\.io(:[0-9]+)?([/?#]|$)"#,
                #"127-0-0-1 ^https?://127\.0\.0\.1(:[0-9]+)?([/?#]|$)"#,
                #"shop-example-co-uk ^https?://shop\.example\.co\.uk(:[0-9]+)?([/?#]|$)"#,
                #"[block] message="Not seen in recorded traffic""#,
                #"unseen ^https?://"#,
            ])
        #expect(rules.contains("# 3 requests: a.example.com, b.example.com"))
    }

    @Test("the proposal lints clean and its tests pass with every rule covered", arguments: ["allowlist", "record"])
    func proposalPassesItsTests(_ mode: String) throws {
        let folder = try TemporaryFolder(["traffic.txt": Self.traffic])
        let proposal = folder.path + "/proposal"
        let learn = runInProcess(["learn", folder.path + "/traffic.txt", "--out", proposal, "--mode", mode])
        let lint = runInProcess(["lint", proposal])
        let test = runInProcess(["test", proposal, "--coverage"])
        #expect(learn.exitCode == 0)
        #expect(lint.exitCode == 0, "\(lint.standardOutput)\(lint.standardError)")
        #expect(test.exitCode == 0, "\(test.standardOutput)")
        #expect(test.outputLines.contains { $0.hasPrefix("coverage:") && $0.contains("rules exercised") })
        #expect(!test.standardOutput.contains("not exercised"))
    }

    @Test("record: a rule per host and first path segment, and a case per method, host and segment")
    func record() throws {
        let folder = try TemporaryFolder(["traffic.txt": Self.traffic])
        let run = runInProcess([
            "learn", folder.path + "/traffic.txt", "--out", folder.path + "/proposal", "--mode", "record",
        ])
        let rules = try String(contentsOfFile: folder.path + "/proposal/learned.rules", encoding: .utf8)
        let tests = try String(contentsOfFile: folder.path + "/proposal/learned.test", encoding: .utf8)
        #expect(
            run.outputLines == [
                "learned 5 rules from 6 requests: \(folder.path)/proposal/learned.rules",
                "wrote 6 test cases: \(folder.path)/proposal/learned.test",
            ])
        #expect(rules.contains(#"b-example-com-v1 ^https?://b\.example\.com(:[0-9]+)?/v1(/|\?|#|$)"#))
        #expect(tests.contains("record     learned/b-example-com-v1   POST https://b.example.com/v1/items"))
        #expect(tests.contains("record     learned/b-example-com-v1   GET https://b.example.com/v1/items?id=3"))
    }

    @Test("traffic that cannot be read exits 1; a category that is not an id is a usage error")
    func errors() throws {
        let folder = try TemporaryFolder(["traffic.txt": Self.traffic])
        let missing = runInProcess(["learn", folder.path + "/none.txt", "--out", folder.path + "/p"])
        let badCategory = runInProcess([
            "learn", folder.path + "/traffic.txt", "--out", folder.path + "/p", "--category", "Bad Name",
        ])
        #expect(missing.exitCode == 1)
        #expect(badCategory.exitCode == 64)
    }
}
