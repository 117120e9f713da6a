import AuditPipeline
import AuditPolicy
import AuditReport
import Foundation
import Testing

func writeTemporary(_ text: String, name: String) throws -> String {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ra-replay-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let path = folder.appendingPathComponent(name).path
    try Data(text.utf8).write(to: URL(fileURLWithPath: path))
    return path
}

@Suite struct TrafficReaderTests {
    static let har = """
        {"log": {"version": "1.2", "entries": [
          {"startedDateTime": "2026-11-20T09:00:00.250Z", "time": 12.5,
           "request": {"method": "GET", "url": "https://www.rivalshop.com/cart", "headers": [{"name": "Cookie", "value": "s=1"}], "bodySize": 0},
           "response": {"status": 200, "bodySize": 512, "content": {"size": 2048}}},
          {"startedDateTime": "2026-11-20T09:01:00Z", "request": {"method": "POST", "url": "https://api.example.com/v1/items", "bodySize": 64},
           "response": {"status": 0, "bodySize": -1}},
          {"startedDateTime": "2026-11-20T09:02:00Z", "request": {"method": "GET"}},
          {"startedDateTime": "yesterday", "request": {"method": "GET", "url": "https://a.test/"}},
          {"request": {"method": "GET", "url": "/relative"}},
          {"request": {"method": "G E T", "url": "https://a.test/"}},
          {"request": {"method": "GET", "url": "https://b.test/"}, "time": 3}
        ]}}
        """

    @Test("HAR entries give method, URL, headers, time, status and sizes; malformed ones are reported by position")
    func harEntries() throws {
        let path = try writeTemporary(Self.har, name: "session.har")
        let (entries, problems) = try TrafficReader.read(path: path)
        #expect(
            entries.map(\.request.url) == [
                "https://www.rivalshop.com/cart", "https://api.example.com/v1/items", "https://b.test/",
            ])
        let first = try #require(entries.first)
        #expect(first.request.headers == [AuditRequest.Header(name: "Cookie", value: "s=1")])
        #expect(first.time == Date(timeIntervalSince1970: 1_795_165_200.25))
        #expect(first.status == 200)
        #expect(first.bytes == 2_048)
        #expect(first.durationMilliseconds == 12.5)
        #expect(entries[1].status == nil)
        #expect(entries[1].bytes == nil)
        #expect(entries[1].requestBodyBytes == 64)
        #expect(entries[2].time == nil)
        #expect(
            problems.map(\.description) == [
                "\(path): entry 3: error: missing log.entries[2].request.url",
                "\(path): entry 4: error: startedDateTime 'yesterday' is not an ISO 8601 time",
                "\(path): entry 5: error: request.url '/relative' is not an absolute http(s) URL",
                "\(path): entry 6: error: invalid method 'G E T'",
            ])
    }

    @Test("a file that is not JSON is one problem at the line and column where it stops being JSON, not a crash")
    func notJSON() throws {
        let path = try writeTemporary(
            "{\"log\": {\"entries\": [\n  {\"request\": {\"méthod\": \"GET\" \"url\"}}", name: "broken.har")
        let (entries, problems) = try TrafficReader.read(path: path)
        #expect(entries.isEmpty)
        #expect(problems.map(\.description) == ["\(path):2:32: error: not valid JSON: invalid value"])
    }

    @Test("JSON that is not a HAR is one problem naming what it lacks")
    func notHAR() throws {
        let path = try writeTemporary("{\"log\": [1, 2]}", name: "other.har")
        let (entries, problems) = try TrafficReader.read(path: path)
        #expect(entries.isEmpty)
        #expect(problems.map(\.description) == ["\(path): error: not a HAR file: wrong type at log"])
    }

    @Test("request lists read 'URL' and 'METHOD URL' lines and report bad lines at line and column")
    func requestList() throws {
        let path = try writeTemporary(
            """
            # comment
            https://a.test/x
            POST  https://api.test/v1/items

            GET https://a.test/ extra
            P@ST https://a.test/
            GET ftp://files.test/
            """, name: "requests.txt")
        let (entries, problems) = try TrafficReader.read(path: path)
        #expect(
            entries.map { "\($0.request.method) \($0.request.url)" } == [
                "GET https://a.test/x", "POST https://api.test/v1/items",
            ])
        #expect(
            problems.map(\.description) == [
                "\(path):5:21: error: unexpected 'extra' (expected '[METHOD] URL')",
                "\(path):6:1: error: invalid method 'P@ST'",
                "\(path):7:5: error: 'ftp://files.test/' is not an absolute http(s) URL",
            ])
    }
}

@Suite struct ReplayerTests {
    @Test("replay evaluates each entry offline and writes records of the embedded schema")
    func replayWritesRecords() async throws {
        let policy = try Policy(
            parsing: """
                [block] message="No rivals"
                rival ^https://www\\.rivalshop\\.com/
                [record]
                api ^https://api\\.
                """, file: "c.rules")
        let har = try writeTemporary(TrafficReaderTests.har, name: "s.har")
        let list = try writeTemporary("https://api.test/x?token=secret\n", name: "l.txt")
        let log = try temporaryLogPath()
        let writer = try AuditLogWriter(path: log)
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let summary = try Replayer(policy: policy).replay([har, list], into: writer, defaultTime: start)
        try await writer.shutdown()
        let records = try AuditLogReader.read(atPath: log).records
        #expect(summary.requests == 4)
        #expect(summary.verdicts == [.block: 1, .pass: 3])
        #expect(summary.problems.count == 4)
        #expect(records.map(\.outcome.kind) == [.blocked, .replayed, .replayed, .replayed])
        #expect(records[0].decision.rule == "c/rival")
        #expect(records[0].request.headers.map(\.value) == ["s=[REDACTED-\(Redaction.default.fingerprint("1"))]"])
        #expect(records[1].decision.recorded == ["c/api"])
        #expect(records[1].outcome.status == nil)
        #expect(records[2].outcome.durationMilliseconds == 3)
        #expect(records[3].time == start)
        #expect(
            records[3].request.url == "https://api.test/x?token=REDACTED-\(Redaction.default.fingerprint("secret"))")
    }
}
