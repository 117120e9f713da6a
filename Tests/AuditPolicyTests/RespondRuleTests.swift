import AuditPolicy
import Foundation
import Testing

@Suite struct RespondRuleTests {
    @Test("[respond STATUS] body= answers with the body, its type, and the captures substituted")
    func inlineBody() throws {
        let policy = try Policy(
            parsing: #"""
                [respond 201] body="created $1 at $0" type=text/plain
                made ^https://api\.test/items/(\w+)$
                """#, file: "local.rules")
        let verdict = policy.verdict("https://api.test/items/box")
        #expect(verdict.action == .respond)
        #expect(verdict.rule?.id == "local/made")
        #expect(verdict.response?.status == 201)
        #expect(verdict.response?.contentType == "text/plain")
        #expect(verdict.response?.body == Array("created box at https://api.test/items/box".utf8))
        #expect(verdict.response?.handler == nil)
    }

    @Test("a JSON body gets its captures escaped for JSON, so the body stays valid JSON")
    func jsonEscaping() throws {
        let policy = try Policy(
            parsing: #"""
                [respond 200] body="{\"q\":\"$1\"}" type=application/json
                search ^api://api\.test/search\?q=(.*)$
                """#, file: "local.rules")
        let verdict = policy.verdict(#"api://api.test/search?q=a"b\c"#)
        let body = try #require(verdict.response?.body)
        #expect(String(decoding: body, as: UTF8.self) == #"{"q":"a\"b\\c"}"#)
        let decoded = try JSONSerialization.jsonObject(with: Data(body)) as? [String: String]
        #expect(decoded == ["q": #"a"b\c"#])
    }

    @Test("a body without type= is text/plain UTF-8; a status alone has no body and no type")
    func defaultTypes() throws {
        let policy = try Policy(
            parsing: """
                [respond 200] body=ok
                text ^https://a\\.test/
                [respond 204]
                empty ^https://b\\.test/
                """, file: "local.rules")
        #expect(policy.verdict("https://a.test/").response?.contentType == "text/plain; charset=utf-8")
        let empty = try #require(policy.verdict("https://b.test/").response)
        #expect(empty.status == 204)
        #expect(empty.contentType == nil)
        #expect(empty.body.isEmpty)
    }

    @Test("file= is read relative to the rules file when the policy loads, its type taken from its extension")
    func fileBody() throws {
        let gif: [UInt8] = Array("GIF89a".utf8) + [1, 0, 1, 0, 0x80, 0, 0]
        let folder = try TemporaryDirectory(files: [
            "local.rules": Array("[respond 200] file=assets/pixel.gif\npixel ^https?://[^/]*tracker\\.test/\n".utf8),
            "assets/pixel.gif": gif,
        ])
        let policy = try Policy(directory: folder.path)
        let response = try #require(policy.verdict("https://ads.tracker.test/p.gif").response)
        #expect(response.status == 200)
        #expect(response.contentType == "image/gif")
        #expect(response.body == gif)
    }

    @Test("type= overrides the type a file's extension implies")
    func fileTypeOverride() throws {
        let folder = try TemporaryDirectory(texts: [
            "local.rules": "[respond 200] file=data.txt type=application/json\nd ^https://d\\.test/\n",
            "data.txt": "{}",
        ])
        let policy = try Policy(directory: folder.path)
        #expect(policy.verdict("https://d.test/").response?.contentType == "application/json")
    }

    @Test("[respond handler:NAME] names a handler, which gives status, type and body itself")
    func handler() throws {
        let policy = try Policy(parsing: "[respond handler:bridge]\nbridge ^bridge://\n", file: "local.rules")
        let verdict = policy.verdict("bridge://call/42")
        #expect(verdict.action == .respond)
        #expect(verdict.response == LocalResponse(handler: "bridge"))
        #expect(verdict.description == "respond by local/bridge (handler bridge)")
    }

    @Test("a respond rule's description names its status, type and size")
    func description() throws {
        let policy = try Policy(parsing: "[respond 200] body=hello\nh ^https://h\\.test/\n", file: "local.rules")
        #expect(
            policy.verdict("https://h.test/").description
                == "respond by local/h (200, text/plain; charset=utf-8, 5 bytes)")
    }

    @Test("a higher-priority respond rule wins over allow, and allow wins a tie")
    func priorities() throws {
        let policy = try Policy(
            parsing: """
                [allow]
                open ^https://x\\.test/
                [respond 503] priority=5
                down ^https://x\\.test/down
                [respond 200]
                tie ^https://x\\.test/
                """, file: "p.rules")
        #expect(policy.verdict("https://x.test/down").response?.status == 503)
        #expect(policy.verdict("https://x.test/up").action == .allow)
    }

    static let lintErrors: [LintCase] = [
        LintCase(
            source: "[1️⃣respond]\nr x",
            message: "respond needs a status or a handler, e.g. [respond 200] or [respond handler:NAME]"),
        LintCase(
            source: "[respond 1️⃣700]\nr x",
            message: "respond status must be a number from 200 to 599 or handler:NAME, found '700'"),
        LintCase(
            source: "[respond 1️⃣ok]\nr x",
            message: "respond status must be a number from 200 to 599 or handler:NAME, found 'ok'"),
        LintCase(
            source: "[respond 1️⃣handler:no/slash]\nr x",
            message: "invalid handler name 'no/slash' (use letters, digits, '.', '_' and '-')"),
        LintCase(
            source: "[respond handler:h] 1️⃣body=x\nr x",
            message: "option 'body' does not apply to [respond handler:h]: the handler gives the response"),
        LintCase(
            source: "[block] 1️⃣type=text/plain\nr x",
            message: "option 'type' applies to respond sections only (found on block)"),
        LintCase(
            source: "[respond 200] type=1️⃣plain\nr x",
            message: "type must be a MIME type such as text/plain, found 'plain'"),
        LintCase(
            source: "[respond 200] body=x 1️⃣file=y.gif\nr x",
            message: "respond takes body= or file=, not both"),
        LintCase(
            source: "[respond 200] body=$2\nr 1️⃣^(a)",
            message: "respond body uses $2 but the pattern of 'r' has 1 capture group"),
    ]

    @Test("a broken respond section is an error at its line and column", arguments: lintErrors)
    func lintError(_ lint: LintCase) throws {
        let marked = MarkedSource(lint.source)
        let found = diagnostics(of: marked.text, file: "local.rules")
        #expect(found.map(\.message) == [lint.message])
        #expect(found.first?.location.line == marked.line)
        #expect(found.first?.location.column == marked.column)
    }

    @Test("file= that is missing, a folder or too large is an error at the file name")
    func badFiles() throws {
        let folder = try TemporaryDirectory(files: [
            "local.rules": Array(
                """
                [respond 200] file=missing.gif
                a ^https://a\\.test/
                [respond 200] file=assets
                b ^https://b\\.test/
                [respond 200] file=huge.bin
                c ^https://c\\.test/

                """.utf8),
            "assets/x": [1],
            "huge.bin": [UInt8](repeating: 0, count: LocalResponder.maximumFileBytes + 1),
        ])
        do {
            _ = try Policy(directory: folder.path)
            Issue.record("a policy with bad respond files loaded")
        } catch {
            guard case .invalidPolicy(let found) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            let file = folder.path + "/local.rules"
            #expect(
                found.map(\.description) == [
                    "\(file):1:20: error: respond file 'missing.gif' not found (looked for \(folder.path)/missing.gif)",
                    "\(file):3:20: error: respond file 'assets' is a folder",
                    "\(file):5:20: error: respond file 'huge.bin' is \(LocalResponder.maximumFileBytes + 1) bytes; "
                        + "a respond file may be at most \(LocalResponder.maximumFileBytes) bytes",
                ])
        }
    }

    @Test("test files check respond cases and their status, and coverage counts respond rules")
    func testFiles() throws {
        let folder = try TemporaryDirectory(texts: [
            "local.rules":
                "[respond 200] body=ok\nhealth ^https://h\\.test/health$\n[respond 404]\ngone ^https://h\\.test/old\n",
            "local.test": """
            respond local/health https://h.test/health -> 200
            respond local/gone   https://h.test/old
            respond local/gone   https://h.test/old/x -> 410
            respond -            https://h.test/nothing

            """,
        ])
        let policy = try Policy(directory: folder.path)
        let report = try policy.runTests(directory: folder.path)
        #expect(report.results.map(\.isPassing) == [true, true, false, false])
        #expect(report.results[2].expected == "respond by local/gone -> 410")
        #expect(report.results[2].actual == "respond by local/gone (404, 0 bytes)")
        #expect(report.unexercisedRules.isEmpty)
    }

    @Test("a status after '->' must be a number from 200 to 599")
    func testFileStatusError() throws {
        let folder = try TemporaryDirectory(texts: [
            "local.rules": "[respond 200]\nh ^https://h\\.test/\n",
            "local.test": "respond local/h https://h.test/ -> ok\n",
        ])
        let policy = try Policy(directory: folder.path)
        let report = try policy.runTests(directory: folder.path)
        #expect(
            report.diagnostics.map(\.description) == [
                "\(folder.path)/local.test:1:36: error: expected a status from 200 to 599, found 'ok'"
            ])
    }
}
