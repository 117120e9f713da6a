import AuditPolicy
import Foundation
import Testing

@Suite struct RuleFileParserTests {
    @Test("the category defaults to the file name without extension")
    func defaultCategory() throws {
        let policy = try Policy(parsing: "[block]\nshop ^https://a\\.test/", file: "policies/competitor.rules")
        #expect(policy.rules.map(\.id) == ["competitor/shop"])
        #expect(policy.rules.first?.category == "competitor")
    }

    @Test("@category sets the category of the rules that follow")
    func categoryDirective() throws {
        let policy = try Policy(
            parsing: """
                [block]
                one ^https://one\\.test/
                @category other
                two ^https://two\\.test/
                """, file: "first.rules")
        #expect(policy.rules.map(\.id) == ["first/one", "other/two"])
    }

    @Test("section options apply to every rule under the header")
    func sectionOptions() throws {
        let policy = try Policy(
            parsing: """
                [warn] message="Say \\"hi\\" \\\\ bye" field=header:User-Agent methods=get,Post priority=-3 case=sensitive tags=a,b-c
                one Bot
                two Crawler
                """)
        for rule in policy.rules {
            #expect(rule.action == .warn)
            #expect(rule.message == #"Say "hi" \ bye"#)
            #expect(rule.field == .header("user-agent"))
            #expect(rule.methods == ["GET", "POST"])
            #expect(rule.priority == -3)
            #expect(rule.pattern.isCaseInsensitive == false)
            #expect(rule.tags == ["a", "b-c"])
        }
        #expect(policy.rules.count == 2)
    }

    @Test("defaults: url field, any method, priority 0, case-insensitive, no message or tags")
    func defaults() throws {
        let rule = try #require(try Policy(parsing: "[record]\nr x").rules.first)
        #expect(rule.field == .url)
        #expect(rule.methods.isEmpty)
        #expect(rule.priority == 0)
        #expect(rule.pattern.isCaseInsensitive)
        #expect(rule.message == nil)
        #expect(rule.tags.isEmpty)
    }

    @Test("the pattern is the rest of the line, spaces inside kept, trailing whitespace trimmed")
    func patternText() throws {
        let policy = try Policy(parsing: "[block]\nspaced\t  ^a b  c \t \n")
        #expect(policy.rules.first?.pattern.source == "^a b  c")
    }

    @Test("comments, blank and indented lines are read as the format says")
    func commentsAndIndentation() throws {
        let policy = try Policy(
            parsing: """
                # a comment

                   # an indented comment
                  [block]
                    indented   ^x
                """)
        #expect(policy.rules.map(\.name) == ["indented"])
        #expect(policy.rules.first?.location == SourceLocation(file: "inline.rules", line: 5, column: 5))
    }

    @Test("a redirect target may contain ']' and placeholders")
    func redirectTargetWithBracket() throws {
        let policy = try Policy(parsing: "[redirect https://x.test/?a[]=$1] priority=2\nr q=(\\w+)")
        let rule = try #require(policy.rules.first)
        #expect(rule.action == .redirect(target: RedirectTemplate("https://x.test/?a[]=$1")))
        #expect(rule.priority == 2)
    }

    @Test("CRLF line endings and a byte-order mark are accepted")
    func crlfAndBOM() throws {
        let bytes: [UInt8] = [0xEF, 0xBB, 0xBF] + Array("[block]\r\nr ^https://a\\.test/$\r\n".utf8)
        let policy = try Policy(sources: [PolicySource(file: "crlf.rules", bytes: bytes)])
        #expect(policy.rules.first?.pattern.source == "^https://a\\.test/$")
        #expect(try policy.rules.first?.pattern.matches("https://a.test/") == true)
    }

    @Test("rules keep files in the given order, then line order")
    func ruleOrder() throws {
        let policy = try Policy(sources: [
            PolicySource(file: "b.rules", text: "[record]\nb1 x\nb2 y"),
            PolicySource(file: "a.rules", text: "[record]\na1 z"),
        ])
        #expect(policy.rules.map(\.id) == ["b/b1", "b/b2", "a/a1"])
    }

    @Test("a directory is searched recursively and read in path order")
    func directoryOrder() throws {
        let directory = try #require(Bundle.module.path(forResource: "ordered", ofType: nil, inDirectory: "Fixtures"))
        let policy = try Policy(directory: directory)
        #expect(policy.rules.map(\.id) == ["first/same", "b/same", "c/seen"])
        #expect(
            policy.files.map { $0.split(separator: "/").suffix(2).joined(separator: "/") } == [
                "ordered/a.rules", "ordered/b.rules", "sub/c.rules",
            ])
    }
}
