import Foundation
import Testing

@testable import AuditReport

@Suite struct JSONSyntaxErrorTests {
    static let cases: [(text: String, line: Int, column: Int, reason: String)] = [
        ("{\"a\" 1}", 1, 6, "invalid value"),
        ("{\n  \"é\": 1\n  \"b\": 2\n}", 3, 3, "invalid value"),
        ("[\"😀\", 01]", 1, 8, "number with leading zero"),
        ("{\"a\": \"\\q\"}", 1, 8, "invalid escape sequence"),
        ("{\"a\": \"x\ny\"}", 1, 9, "unescaped control character"),
        ("{\"log\": {\"entries\": [\n", 2, 1, "unexpected end of file"),
        ("", 1, 1, "unexpected end of file"),
        ("{}\n\ngarbage", 3, 1, "invalid value"),
    ]

    @Test(
        "a syntax error is placed at its line and its column in characters, with Foundation's reason",
        arguments: cases)
    func placed(_ text: String, _ line: Int, _ column: Int, _ reason: String) throws {
        let error = try #require(JSONSyntaxError(in: Data(text.utf8)))
        #expect(error.description == "\(line):\(column): \(reason)")
    }

    @Test(
        "JSON text, with or without a byte order mark, has no syntax error", arguments: ["{}", "\u{FEFF}[1]", "\"x\""])
    func valid(_ text: String) {
        #expect(JSONSyntaxError(in: Data(text.utf8)) == nil)
    }

    @Test("a recording that is not JSON names the file, line and column; JSON of another shape is not a HAR")
    func recordingErrors() throws {
        let broken = try writeTemporary("{\"log\": {\"entries\": [\n  {\"request\": 1}\n  ", name: "broken.har")
        #expect(throws: RecordingError.invalidJSON(path: broken, line: 3, column: 3, reason: "unexpected end of file"))
        {
            try HARReplay(path: broken)
        }
        #expect(
            RecordingError.invalidJSON(path: broken, line: 3, column: 3, reason: "unexpected end of file").description
                == "\(broken):3:3: error: not valid JSON: unexpected end of file")
        let other = try writeTemporary("{\"entries\": []}", name: "other.har")
        #expect(throws: RecordingError.notHAR(path: other)) { try HARReplay(path: other) }
        #expect(throws: RecordingError.invalidJSON(path: broken, line: 3, column: 3, reason: "unexpected end of file"))
        {
            try HARRecorder(path: broken)
        }
    }
}
