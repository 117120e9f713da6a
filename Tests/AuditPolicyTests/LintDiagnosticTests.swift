import AuditPolicy
import Foundation
import Testing

/// One lint error: a rule file with `1️⃣` where the error must point, and the exact message.
struct LintCase: CustomTestStringConvertible, Sendable {
    let source: String
    let message: String
    var testDescription: String { message }
}

@Suite struct LintDiagnosticTests {
    static let errors: [LintCase] = [
        LintCase(
            source: "[1️⃣blok]\nr x",
            message: "unknown action 'blok' (expected block, redirect, respond, warn, allow, record, cache)"),
        LintCase(
            source: "[1️⃣]\nr x",
            message: "empty section header (expected an action: block, redirect, respond, warn, allow, record, cache)"),
        LintCase(source: "1️⃣[block\nr x", message: "section header has no closing ']'"),
        LintCase(
            source: "[1️⃣redirect]\nr x", message: "redirect needs a target URL, e.g. [redirect https://example.com/]"),
        LintCase(
            source: "[redirect 1️⃣/relative/path]\nr x",
            message: "redirect target '/relative/path' is not an absolute http(s) URL"),
        LintCase(source: "[redirect 1️⃣https://a.test/ x]\nr x", message: "redirect target must not contain spaces"),
        LintCase(source: "[block 1️⃣now]\nr x", message: "action 'block' takes no argument, found 'now'"),
        LintCase(
            source: "[block] 1️⃣prio=1\nr x",
            message:
                "unknown option 'prio' (expected message, field, methods, priority, case, tags, body, file, type, ttl, offline, private)"
        ),
        LintCase(source: "[block] 1️⃣message\nr x", message: "option 'message' needs a value (key=value)"),
        LintCase(
            source: "[cache] offline 1️⃣privat\nr x",
            message:
                "unknown option 'privat' (expected message, field, methods, priority, case, tags, body, file, type, ttl, offline, private)"
        ),
        LintCase(source: "[block] priority=1 1️⃣priority=2\nr x", message: "option 'priority' is given twice"),
        LintCase(source: "[block] message=1️⃣\"never closed\nr x", message: "quoted value has no closing '\"'"),
        LintCase(
            source: "[block] field=1️⃣cookie\nr x",
            message: "unknown field 'cookie' (expected url, host, path, query, userinfo, method or header:NAME)"),
        LintCase(
            source: "[block] field=1️⃣header:\nr x",
            message: "unknown field 'header:' (expected url, host, path, query, userinfo, method or header:NAME)"),
        LintCase(
            source: "[block] methods=1️⃣GET,,POST\nr x",
            message: "invalid method '' in methods (expected a list such as GET,POST)"),
        LintCase(source: "[block] priority=1️⃣high\nr x", message: "priority must be an integer, found 'high'"),
        LintCase(
            source: "[block] case=1️⃣upper\nr x", message: "case must be 'insensitive' or 'sensitive', found 'upper'"),
        LintCase(source: "[block] tags=1️⃣a,,b\nr x", message: "invalid tags 'a,,b' (expected names such as a,b)"),
        LintCase(source: "1️⃣@categroy x\n[block]\nr x", message: "unknown directive '@categroy' (expected @category)"),
        LintCase(source: "1️⃣@category\n[block]\nr x", message: "@category needs a name"),
        LintCase(
            source: "@category 1️⃣bad/name\n[block]\nr x",
            message: "invalid category 'bad/name' (use letters, digits, '.', '_' and '-')"),
        LintCase(
            source: "1️⃣early ^x\n[block]\nr x",
            message: "rule 'early' is outside any section (add a header such as [block] above it)"),
        LintCase(
            source: "[block]\n1️⃣bad!id ^x", message: "invalid rule id 'bad!id' (use letters, digits, '.', '_' and '-')"),
        LintCase(source: "[block]\n1️⃣lonely   ", message: "rule 'lonely' has no pattern (expected 'ID PATTERN')"),
        LintCase(
            source: "[block]\n\t 1️⃣bad!id ^x",
            message: "invalid rule id 'bad!id' (use letters, digits, '.', '_' and '-')"),
        LintCase(
            source: "[block]\n\t 1️⃣bäd ^x", message: "invalid rule id 'bäd' (use letters, digits, '.', '_' and '-')"),
        LintCase(
            source: "[block] message=\"naïve 👍🏽\" 1️⃣prio=1\nr x",
            message:
                "unknown option 'prio' (expected message, field, methods, priority, case, tags, body, file, type, ttl, offline, private)"
        ),
        LintCase(source: "[block]\nr   ^https://(a|b1️⃣", message: "invalid pattern: missing closing parenthesis"),
        LintCase(source: "[block]\nr   ^x1️⃣)", message: "invalid pattern: unmatched closing parenthesis"),
        LintCase(source: "[block]\nr   ^é[z-1️⃣a]", message: "invalid pattern: range out of order in character class"),
        LintCase(
            source: "[redirect https://a.test/$2]\nr   1️⃣^https://(x)",
            message: "redirect target uses $2 but the pattern of 'r' has 1 capture group"),
        LintCase(
            source: "[block]\nr ^x\n1️⃣r ^y", message: "duplicate rule id 'test/r' (first defined at test.rules:2:1)"),
    ]

    @Test("each problem is reported at its line and column with a clear message", arguments: errors)
    func reportsError(_ lintCase: LintCase) {
        let source = MarkedSource(lintCase.source)
        let found = diagnostics(of: source.text)
        #expect(found.map(\.message) == [lintCase.message])
        #expect(found.first?.location == SourceLocation(file: "test.rules", line: source.line, column: source.column))
        #expect(found.first?.severity == .error)
    }

    /// Pattern parts no canonical URL has: a warning each, at the part.
    static let canonicalFormWarnings: [LintCase] = [
        LintCase(
            source: "[block] case=sensitive\nr ^https?://1️⃣Rival\\.com/",
            message:
                "the capital 'R' in the host never matches this case-sensitive rule: canonical hosts are lower-case"),
        LintCase(
            source: "[block]\nr ^https?://rival\\.com1️⃣\\./",
            message: "a dot at the end of the host never matches: canonical hosts have none"),
        LintCase(
            source: "[block] field=host\nr ^rival\\.com1️⃣\\.$",
            message: "a dot at the end of the host never matches: canonical hosts have none"),
        LintCase(
            source: "[block]\nr ^https?://me1️⃣@rival\\.com/",
            message:
                "'@' in the host never matches: canonical URLs have no user info (a rule on it takes field=userinfo)"),
        LintCase(
            source: "[block] field=path\nr ^/1️⃣%61dmin",
            message: "'%61' never matches: canonical URLs decode escapes of unreserved characters, so write 'a'"),
        LintCase(
            source: "[block] case=sensitive\nr /a1️⃣%2fb",
            message:
                "'%2f' never matches a case-sensitive rule: canonical URLs write escapes in upper case, so write '%2F'"),
    ]

    @Test(
        "a pattern part that can never match a canonical URL is a warning at that part",
        arguments: canonicalFormWarnings)
    func canonicalFormWarning(_ lintCase: LintCase) throws {
        try expectOneWarning(lintCase)
    }

    /// `lintCase`'s source loads with its one warning, at the marker.
    private func expectOneWarning(_ lintCase: LintCase) throws {
        let source = MarkedSource(lintCase.source)
        let found = try Policy(parsing: source.text, file: "test.rules").warnings
        #expect(found.map(\.message) == [lintCase.message])
        #expect(found.first?.location == SourceLocation(file: "test.rules", line: source.line, column: source.column))
        #expect(found.first?.severity == .warning)
    }

    @Test("patterns written against the canonical form, and '@' or capitals where they can match, get no warning")
    func canonicalFormClean() throws {
        let clean = """
            [block]
            a ^https?://[^/@]*rival\\.com/A%2Fb%2fc
            b ^https?://([a-z0-9-]+\\.)*rivalshop\\.com(/|$)
            e ^https://api\\.
            [block] case=sensitive
            c ^https?://rival\\.com/Admin\\S
            [block] field=header:from
            d ^Me@Example%41
            """
        #expect(try Policy(parsing: clean, file: "clean.rules").warnings.isEmpty)
    }

    static let optionOnRuleLine: [LintCase] = [
        LintCase(
            source: "[cache]\nall 1️⃣ttl=1h .",
            message:
                "the pattern of 'all' begins with 'ttl=1h', which reads as a section option; options go on the "
                + "section's header, after the ']' ([cache] ttl=1h), and on a rule's line they are part of its pattern"),
        LintCase(
            source: "[redirect https://a.test/]\nr 1️⃣priority=3 ^http://b\\.test/",
            message:
                "the pattern of 'r' begins with 'priority=3', which reads as a section option; options go on the "
                + "section's header, after the ']' ([redirect …] priority=3), and on a rule's line they are part of "
                + "its pattern"),
        LintCase(
            source: "[block]\nr 1️⃣offline ^http://b\\.test/",
            message:
                "the pattern of 'r' begins with 'offline', which reads as a section option; options go on the "
                + "section's header, after the ']' (in [cache] sections), and on a rule's line they are part of its "
                + "pattern"),
    ]

    @Test(
        "a section option written at the start of a rule's pattern is a warning that says where options go",
        arguments: optionOnRuleLine)
    func optionOnRuleLineWarning(_ lintCase: LintCase) throws {
        try expectOneWarning(lintCase)
    }

    @Test("a pattern that only looks like an option, without more pattern after it, gets no warning")
    func optionLikePatternAlone() throws {
        let clean = """
            [block] field=query
            a type=json
            b ^offline$
            [block] field=header:x-mode
            c private
            """
        #expect(try Policy(parsing: clean, file: "clean.rules").warnings.isEmpty)
    }

    @Test("a diagnostic prints compiler-style")
    func compilerStyle() {
        let found = diagnostics(of: "[blok]\nr x", file: "policies/danger.rules")
        #expect(
            found.map(\.description) == [
                "policies/danger.rules:1:2: error: unknown action 'blok' (expected block, redirect, respond, warn, allow, record, cache)"
            ])
    }

    @Test("a file that is not UTF-8 is an error at the first bad byte")
    func notUTF8() {
        let bytes = Array("[block]\nrule ^caf".utf8) + [0xE9] + Array("$\n".utf8)
        #expect(
            throws: PolicyError.invalidPolicy([
                Diagnostic(
                    .error, at: SourceLocation(file: "latin1.rules", line: 2, column: 10),
                    "file is not valid UTF-8 (byte 0xE9)")
            ])
        ) {
            try Policy(sources: [PolicySource(file: "latin1.rules", bytes: bytes)])
        }
    }

    @Test("a binary file is an error, not a crash")
    func binaryFile() {
        let bytes: [UInt8] = [0x7F, 0x45, 0x4C, 0x46, 0x02, 0x01, 0x01, 0x00, 0xFF, 0xFE, 0x00, 0x9C]
        #expect(
            diagnostics(ofBytes: bytes, file: "a.out.rules").map(\.description) == [
                "a.out.rules:1:9: error: file is not valid UTF-8 (byte 0xFF)"
            ])
    }

    @Test("a file name that is not a valid category asks for @category")
    func badFileName() {
        #expect(
            diagnostics(of: "[block]\nr x", file: "my rules.rules").map(\.message) == [
                "file name 'my rules' is not a valid category; add '@category NAME' before the first rule"
            ])
        #expect(
            diagnostics(of: "@category ok\n[block]\nr x", file: "my rules.rules").map(\.message) == [
                "file name 'my rules' is not a valid category; add '@category NAME' before the first rule"
            ])
    }

    @Test("duplicate ids across files point at the second definition")
    func duplicateAcrossFiles() {
        #expect(
            throws: PolicyError.invalidPolicy([
                Diagnostic(
                    .error, at: SourceLocation(file: "b.rules", line: 3, column: 1),
                    "duplicate rule id 'shared/r' (first defined at a.rules:3:1)")
            ])
        ) {
            try Policy(sources: [
                PolicySource(file: "a.rules", text: "@category shared\n[block]\nr ^a"),
                PolicySource(file: "b.rules", text: "@category shared\n[warn]\nr ^b"),
            ])
        }
    }

    @Test("every error of a file is reported in one run, sorted by position")
    func allErrorsAtOnce() {
        let found = diagnostics(
            of: """
                [blok]
                a ^x
                [block] priority=x
                b ^(
                c ^ok
                """)
        #expect(found.map { "\($0.location.line):\($0.location.column)" } == ["1:2", "3:18", "4:5"])
    }

    @Test("a policy with any error loads nothing")
    func noHalfLoadedPolicy() {
        #expect(throws: PolicyError.self) {
            try Policy(parsing: "[block]\ngood ^https://fine\\.test/\nbad ^(")
        }
    }

    @Test("an empty section and priority on a record rule are warnings, not errors")
    func warnings() throws {
        let policy = try Policy(parsing: "[block]\n[record] priority=3\nr x", file: "w.rules")
        #expect(
            policy.warnings.map(\.description) == [
                "w.rules:1:1: warning: section has no rules",
                "w.rules:2:1: warning: priority has no effect on record rules",
            ])
        #expect(policy.rules.count == 1)
    }

    @Test("lint checks rule and test files of a folder together")
    func lintFolder() throws {
        let folder = try TemporaryDirectory(texts: [
            "shop.rules": "[block]\nrival ^https://rival\\.test/\n[bad]\nx y",
            "shop.test": "block shop/rival https://rival.test/\nblok shop/rival https://rival.test/",
        ])
        let report = try PolicyLinter.lint(directory: folder.path)
        #expect(
            report.diagnostics.map(\.description) == [
                "\(folder.path)/shop.rules:3:2: error: unknown action 'bad' (expected block, redirect, respond, warn, allow, record, cache)",
                "\(folder.path)/shop.test:2:1: error: unknown expectation 'blok' (expected pass, allow, block, redirect, warn, respond, record, cache)",
            ])
        #expect(report.errorCount == 2)
    }

    @Test("lint reports a test case naming a rule that does not exist")
    func lintUnknownRuleInTest() throws {
        let folder = try TemporaryDirectory(texts: [
            "shop.rules": "[block]\nrival ^https://rival\\.test/",
            "shop.test": "block   shop/rivl https://rival.test/",
        ])
        let report = try PolicyLinter.lint(directory: folder.path)
        #expect(
            report.diagnostics.map(\.description) == ["\(folder.path)/shop.test:1:9: error: unknown rule 'shop/rivl'"])
    }

    @Test("a folder without rule files is an error")
    func emptyFolder() throws {
        let folder = try TemporaryDirectory(texts: ["README.md": "nothing here"])
        #expect(throws: PolicyError.noRuleFiles(directory: folder.path)) { try Policy(directory: folder.path) }
        #expect(try PolicyLinter.lint(directory: folder.path).hasErrors)
    }

    @Test("a missing folder is a clear error")
    func missingFolder() {
        #expect(throws: PolicyError.cannotRead(path: "/nonexistent/policies", reason: "no such directory")) {
            try Policy(directory: "/nonexistent/policies")
        }
    }
}

@Suite struct SectionWarningTests {
    @Test("a section whose only rule has an error is not also reported as empty")
    func brokenRuleIsNotEmptySection() {
        #expect(diagnostics(of: "[warn]\nlook ^(").map(\.message) == ["invalid pattern: missing closing parenthesis"])
    }
}
