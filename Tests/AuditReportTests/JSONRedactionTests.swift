import AuditReport
import Foundation
import Testing

/// `Redaction.redact(jsonText:)`: the secrets of a JSON body replaced, every other byte as the
/// server wrote it.
@Suite struct JSONRedactionTests {
    let redaction = Redaction.default

    @Test("a redacted JSON text keeps the rest byte for byte: layout, key order, number spellings and escapes")
    func keepsTheRest() {
        let text = """
            {
              "zeta": [1.50, -0, 1E3, 12345678901234567890123],
              "alpha": "caf\\u00e9 \\/ \\"quoted\\"",
              "password" :\t"hunter2",
              "empty": {}, "none": [ ]
            }

            """
        let expected = text.replacingOccurrences(
            of: #""hunter2""#, with: #""REDACTED-\#(redaction.fingerprint("hunter2"))""#)
        #expect(redaction.redact(jsonText: text) == expected)
    }

    @Test("a credential field is redacted whatever its type, a null left as it is")
    func credentialOfAnyType() {
        let text = #"{"token": 12345, "api_key": true, "client-secret": null, "list": {"Password": ["a", 7]}}"#
        let fingerprint = { (value: String) in "\"REDACTED-\(redaction.fingerprint(value))\"" }
        let expected =
            #"{"token": \#(fingerprint("12345")), "api_key": \#(fingerprint("true")), "client-secret": null, "#
            + #""list": {"Password": [\#(fingerprint("a")), \#(fingerprint("7"))]}}"#
        #expect(redaction.redact(jsonText: text) == expected)
    }

    @Test(
        "credential names are read in any case and spelling, short and cloud ones included",
        arguments: [
            "password", "PASSWORD", "pass_word", "pass", "passphrase", "api-key", "apiKey", "client_secret",
            "SecretAccessKey", "aws_secret_access_key", "stripeSecretKey", "signing_key", "SessionToken",
            "private_key",
        ])
    func credentialNames(_ name: String) {
        let text = #"{"\#(name)": "value-1", "user": "ann"}"#
        let expected = #"{"\#(name)": "REDACTED-\#(redaction.fingerprint("value-1"))", "user": "ann"}"#
        #expect(redaction.redact(jsonText: text) == expected)
    }

    @Test(
        "names that only look like credentials are kept",
        arguments: ["passenger", "keyboard", "public_key", "tokens_used", "password_hint"])
    func notCredentialNames(_ name: String) {
        let text = #"{"\#(name)": "value-1"}"#
        #expect(redaction.redact(jsonText: text) == text)
    }

    @Test("a string that holds JSON (an echo of a request body) is redacted inside, keeping its own layout")
    func jsonInsideAString() {
        let text = #"{"data": "{\"user\": \"ann\",\n \"password\": \"hunter2\"}"}"#
        let expected =
            #"{"data": "{\"user\": \"ann\",\n \"password\": \"REDACTED-\#(redaction.fingerprint("hunter2"))\"}"}"#
        #expect(redaction.redact(jsonText: text) == expected)
    }

    @Test("a field name that holds JSON (a form field made of a JSON body) is redacted inside; other names stay")
    func jsonInsideAName() {
        let text = #"{"form": {"{\"password\":\"hunter2\"}": "", "password": "x"}}"#
        let expected =
            #"{"form": {"{\"password\":\"REDACTED-\#(redaction.fingerprint("hunter2"))\"}": "", "#
            + #""password": "REDACTED-\#(redaction.fingerprint("x"))"}}"#
        #expect(redaction.redact(jsonText: text) == expected)
    }

    @Test("a secret-shaped string is redacted under any key, as the log redacts it")
    func secretShapedValue() {
        let jwt =
            "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
        let text = "[\"\(jwt)\", \"plain\"]"
        let redacted = redaction.redact(jsonText: text)
        #expect(!redacted.contains(jwt))
        #expect(redacted.hasSuffix(#"", "plain"]"#))
    }

    @Test(
        "a text that is not JSON, or holds nothing to redact, comes back unchanged",
        arguments: [
            #"{"password": "x""#, "password=hunter2", "", #"{"user": "ann", "n": [1, 2.0]}"#, "\u{FEFF}[1]",
            #"  "just a string"  "#,
        ])
    func unchanged(_ text: String) {
        #expect(redaction.redact(jsonText: text) == text)
    }

    @Test("a byte order mark is kept in front of the redacted text")
    func byteOrderMark() {
        let text = "\u{FEFF}{\"token\":\"abc\"}"
        #expect(redaction.redact(jsonText: text) == "\u{FEFF}{\"token\":\"REDACTED-\(redaction.fingerprint("abc"))\"}")
    }

    @Test("random JSON documents: the redacted text reads as the document with exactly its secrets replaced")
    func randomDocuments() throws {
        var random = SystemRandomNumberGenerator()
        for _ in 0..<300 {
            let document = Self.value(depth: 0, random: &random)
            let text = document.text
            let redacted = redaction.redact(jsonText: text)
            let read = try JSONSerialization.jsonObject(with: Data(redacted.utf8), options: [.fragmentsAllowed])
            let expected = document.redacted(key: nil, redaction: redaction).object
            #expect(try Self.sorted(read) == Self.sorted(expected), "\(text)\n→ \(redacted)")
            if !document.hasSecret { #expect(redacted == text) }
        }
    }

    /// A JSON value written with sorted keys, to compare two read values.
    static func sorted(_ value: Any) throws -> String {
        String(
            decoding: try JSONSerialization.data(withJSONObject: value, options: [.sortedKeys, .fragmentsAllowed]),
            as: UTF8.self)
    }

    /// A JSON value with the layout it is written in.
    indirect enum Document {
        case scalar(String, Any)
        case string(String)
        case array([Document], String)
        case object([(String, Document)], String)

        var text: String {
            switch self {
            case .scalar(let spelling, _): spelling
            case .string(let value): Self.literal(value)
            case .array(let items, let space): "[" + space + items.map(\.text).joined(separator: "," + space) + "]"
            case .object(let members, let space):
                "{" + space
                    + members.map { Self.literal($0.0) + space + ":" + $0.1.text }.joined(separator: "," + space)
                    + space + "}"
            }
        }

        var object: Any {
            switch self {
            case .scalar(_, let value): value
            case .string(let value): value
            case .array(let items, _): items.map(\.object)
            case .object(let members, _):
                Dictionary(members.map { ($0.0, $0.1.object) }, uniquingKeysWith: { _, last in last })
            }
        }

        var hasSecret: Bool {
            switch self {
            case .scalar, .string: false
            case .array(let items, _): items.contains(where: \.hasSecret)
            case .object(let members, _):
                members.contains { Self.credentialKeys.contains($0.0) && !$0.1.isNull || $0.1.hasSecret }
            }
        }

        var isNull: Bool {
            if case .scalar("null", _) = self { return true }
            return false
        }

        /// The document as the reference redaction makes it: every non-null value under a
        /// credential key replaced by the fingerprint of its spelling.
        func redacted(key: String?, redaction: Redaction) -> Document {
            switch self {
            case .scalar(let spelling, _) where key.map(Self.credentialKeys.contains) == true && spelling != "null":
                .string("REDACTED-" + redaction.fingerprint(spelling))
            case .string(let value) where key.map(Self.credentialKeys.contains) == true:
                .string("REDACTED-" + redaction.fingerprint(value))
            case .scalar, .string: self
            case .array(let items, let space): .array(items.map { $0.redacted(key: key, redaction: redaction) }, space)
            case .object(let members, let space):
                .object(members.map { ($0.0, $0.1.redacted(key: $0.0, redaction: redaction)) }, space)
            }
        }

        static let credentialKeys: Set<String> = ["password", "api_key", "refresh-token"]
        static let keys = ["name", "id", "note", "é", "a\"b"] + credentialKeys.sorted()

        static func literal(_ value: String) -> String {
            "\""
                + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                .replacingOccurrences(of: "\n", with: "\\n") + "\""
        }
    }

    static func value(depth: Int, random: inout some RandomNumberGenerator) -> Document {
        let spaces = ["", " ", "\n  ", "\t"]
        let space = spaces.randomElement(using: &random) ?? ""
        switch Int.random(in: depth > 3 ? 0...1 : 0...3, using: &random) {
        case 0:
            let scalars: [(String, Any)] = [
                ("1", 1), ("-2.50", -2.5), ("1e2", 100.0), ("true", true), ("false", false), ("null", NSNull()),
            ]
            let (spelling, value) = scalars.randomElement(using: &random) ?? ("1", 1)
            return .scalar(spelling, value)
        case 1:
            return .string(
                ["ann", "two words", "line\nbreak", "q\"uote", "back\\slash", "é"].randomElement(using: &random) ?? "")
        case 2:
            return .array(
                (0..<Int.random(in: 0...3, using: &random)).map { _ in value(depth: depth + 1, random: &random) }, space
            )
        default:
            var names = Document.keys.shuffled(using: &random)
            return .object(
                (0..<Int.random(in: 0...4, using: &random)).map { _ in
                    (names.removeLast(), value(depth: depth + 1, random: &random))
                }, space)
        }
    }
}
