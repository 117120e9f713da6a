import AuditPolicy
import Foundation
import Testing

@testable import AuditReport

private func slowDecode(_ line: String) -> Result<AuditRecord, Error> {
    Result { try AuditLogCoding.decoder().decode(AuditRecord.self, from: Data(line.utf8)) }
}

private func fastDecode(_ line: String) -> AuditRecord? { AuditLogLineDecoder.decode(ArraySlice(line.utf8)) }

@Suite struct AuditLogLineDecoderTests {
    @Test("every line the writer writes is read on the fast path, exactly as JSONDecoder reads it")
    func writerLinesMatchJSONDecoder() throws {
        var random = SplitMix64(state: 2026)
        for _ in 0..<2_000 {
            let record = randomRecord(&random)
            let line = try record.jsonLine()
            let fast = fastDecode(line)
            #expect(fast != nil, "fast path declined \(line)")
            #expect(fast == (try slowDecode(line).get()), "\(line)")
            #expect(fast == record)
        }
    }

    @Test(
        "lines outside the writer's own form are left to JSONDecoder, which reads or rejects them",
        arguments: [
            #"{"schema":1,"id":"ID","time":"2026-11-21T10:00:00+01:00","request":REQ,"decision":DEC,"outcome":OUT}"#,
            #"{"schema":1,"id":"ID","time":"2026-11-21T10:00:00.123456Z","request":REQ,"decision":DEC,"outcome":OUT}"#,
            #"{"schema":1,"id":"ID","time":"2026-02-30T10:00:00Z","request":REQ,"decision":DEC,"outcome":OUT}"#,
            #"{"schema":1.0,"id":"ID","time":"2026-11-21T10:00:00Z","request":REQ,"decision":DEC,"outcome":OUT}"#,
            #"{"schema":1,"schema":2,"id":"ID","time":"2026-11-21T10:00:00Z","request":REQ,"decision":DEC,"outcome":OUT}"#,
            #"{"sch\u0065ma":1,"id":"ID","time":"2026-11-21T10:00:00Z","request":REQ,"decision":DEC,"outcome":OUT}"#,
            #"{"schema":1,"id":"not-a-uuid","time":"2026-11-21T10:00:00Z","request":REQ,"decision":DEC,"outcome":OUT}"#,
            #"{"schema":1,"id":"ID","time":"2026-11-21T10:00:00Z","request":REQ,"decision":DEC}"#,
            #"{"schema":1,"id":"ID","time":"2026-11-21T10:00:00Z","request":REQ,"decision":DEC,"outcome":OUT} x"#,
            #"{"schema":1,"id":"ID","time":"2026-11-21T10:00:00Z","request":REQ,"decision":DEC,"outcome":OUT,"#,
            #"  { "schema" : 1 , "id" : "ID" , "time" : "2026-11-21T10:00:00Z" , "request" : REQ , "decision" : DEC , "outcome" : OUT }  "#,
            #"{"schema":1,"id":"ID","time":"2026-11-21T10:00:00Z","request":{"method":"GET","url":"https://a.test/\ud83d\ude00\u00e9\u0041\b\f\n\r\t\"\\\/","host":"a.test","headers":[]},"decision":DEC,"outcome":OUT}"#,
            #"{"schema":1,"id":"ID","time":"2026-11-21T10:00:00Z","request":{"method":"GET","url":"\ud83d","host":"a.test","headers":[]},"decision":DEC,"outcome":OUT}"#,
            #"{"extra":{"a":[1,2.5e3,true,false,null,{"b":"c"}]},"schema":1,"id":"ID","time":"2026-11-21T10:00:00Z","request":REQ,"decision":DEC,"outcome":OUT,"warning":null}"#,
        ]
    )
    func otherFormsMatchJSONDecoder(template: String) throws {
        let line =
            template
            .replacingOccurrences(of: "ID", with: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")
            .replacingOccurrences(
                of: "REQ", with: #"{"method":"GET","url":"https://a.test/","host":"a.test","headers":[]}"#
            )
            .replacingOccurrences(
                of: "DEC",
                with: #"{"verdict":"pass","recorded":[],"recordedCategories":[],"errors":[],"nanoseconds":5}"#
            )
            .replacingOccurrences(of: "OUT", with: #"{"kind":"response","durationMilliseconds":1,"redirects":[]}"#)
        let path = try temporaryLogPath()
        try Data((line + "\n").utf8).write(to: URL(fileURLWithPath: path))
        let (records, problems) = try AuditLogReader.read(atPath: path)
        switch slowDecode(line) {
        case .success(let expected):
            #expect(records == [expected])
            #expect(problems.isEmpty)
        case .failure:
            #expect(records.isEmpty)
            #expect(problems.count == 1)
        }
        if let fast = fastDecode(line) { #expect(fast == (try slowDecode(line).get())) }
        if line.contains(#"\ud83d\ude00"#) {
            #expect(records.first?.request.url == "https://a.test/\u{1F600}\u{E9}A\u{8}\u{C}\n\r\t\"\\/")
        }
    }

    /// The summary of `records`, added one by one.
    private func summary(_ records: [AuditRecord]) -> SummaryReport {
        var builder = SummaryBuilder()
        for record in records { builder.add(record) }
        return builder.build(logs: [])
    }

    @Test("decoding for a summary accepts exactly the lines whole decoding accepts, and counts them the same")
    func summaryExtentMatchesWhole() throws {
        var random = SplitMix64(state: 77)
        var wholeRecords: [AuditRecord] = []
        var summaryRecords: [AuditRecord] = []
        var declined = 0
        for index in 0..<3_000 {
            var line = Array(try randomRecord(&random).jsonLine().utf8)
            // Two lines in three get one byte changed, mostly inside the values a summary skips.
            if index % 3 != 0 {
                let position = Int.random(in: 0..<line.count, using: &random)
                line[position] =
                    [0x00, 0x1F, 0x22, 0x5C, 0x7B, 0x80, 0xC3, 0xFF, 0x31, 0x6E]
                    .randomElement(using: &random) ?? 0
            }
            let whole = AuditLogLineDecoder.decode(line[...], extent: .whole)
            let forSummary = AuditLogLineDecoder.decode(line[...], extent: .summary)
            #expect((whole == nil) == (forSummary == nil), "\(String(decoding: line, as: UTF8.self))")
            if let whole, let forSummary {
                wholeRecords.append(whole)
                summaryRecords.append(forSummary)
            } else {
                declined += 1
            }
        }
        #expect(declined > 500 && wholeRecords.count > 1_000)
        #expect(summary(summaryRecords) == summary(wholeRecords))
    }

    @Test(
        "a value a summary skips is still checked: a bad one declines the line as whole decoding does",
        arguments: [
            (#""forwardedURL":"https://a.test/\x""#, false), (#""forwardedURL":"https://a.test/\u00e9""#, true),
            ("\"forwardedURL\":\"https://a.test/\u{01}\"", false), (#""forwardedURL":7"#, false),
            (#""finalURL":"\ud83d""#, false), (#""finalURL":null"#, true), (#""redirects":["a",1]"#, false),
            (#""redirects":["a","\/b"]"#, true), (#""finalURL":"caf\#u{E9}""#, true),
        ]
    )
    func skippedValuesChecked(member: String, isValid: Bool) {
        let line =
            #"{"decision":{"errors":[],"message":"m","nanoseconds":5,"recorded":[],"recordedCategories":[],"verdict":"pass"},"#
            + #""id":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F","outcome":{"durationMilliseconds":1,"kind":"response","#
            + member + (member.hasPrefix(#""redirects""#) ? "" : #","redirects":[]"#)
            + #"},"request":{"headers":[{"name":"a","value":"b"}],"host":"a.test","#
            + #""method":"GET","url":"https://a.test/"},"schema":1,"time":"2026-11-21T10:00:00Z"}"#
        let bytes = Array(line.utf8)[...]
        #expect((AuditLogLineDecoder.decode(bytes, extent: .whole) != nil) == isValid)
        #expect((AuditLogLineDecoder.decode(bytes, extent: .summary) != nil) == isValid)
        #expect(((try? slowDecode(line).get()) != nil) == isValid)
    }

    @Test(
        "ids are read as UUID(uuidString:) reads them",
        arguments: [
            "E621E1F8-C36C-495A-93FC-0C247A3E6E5F", "e621e1f8-c36c-495a-93fc-0c247a3e6e5f",
            "e621E1F8-c36C-495a-93Fc-0C247a3E6e5F", "00000000-0000-0000-0000-000000000000",
            "FFFFFFFF-FFFF-FFFF-FFFF-FFFFFFFFFFFF", "G621E1F8-C36C-495A-93FC-0C247A3E6E5F",
            "E621E1F8-C36C-495A-93FC-0C247A3E6E5G", "E621E1F8C36C-495A-93FC-0C247A3E6E5F0",
            "E621E1F8-C36C-495A-93FC-0C247A3E6E5", "E621E1F8-C36C-495A-93FC-0C247A3E6E5F0",
            "E621E1F8-C36C-495A-93FC-0C247A3E6E/F", "E621E1F8-C36C-495A-93FC-0C247A3E6E:F",
            "E621E1F8-C36C-495A-93FC-0C247A3E6E@F", "E621E1F8-C36C-495A-93FC-0C247A3E6E`F",
            "E621E1F8 C36C-495A-93FC-0C247A3E6E5F",
        ]
    )
    func ids(text: String) {
        #expect(AuditLogLineDecoder.uuid(text) == UUID(uuidString: text))
    }

    @Test("numbers of up to 15 digits read on the fast path are the doubles Double(String) makes of them")
    func shortDecimals() throws {
        var random = SplitMix64(state: 15)
        let fixed = [
            "0", "-0", "0.1", "0.3", "-2.5", "1500.0", "999999999999999", "0.000000000000001", "9007199.254740993",
        ]
        func digits(_ count: Int) -> String {
            String((0..<count).map { _ in Character(String(random.next() % 10)) })
        }
        let generated = (0..<5_000).map { _ -> String in
            let integerDigits = Int(random.next() % 9)
            let fractionDigits = Int(random.next() % UInt64(16 - max(integerDigits, 1)))
            let integer = integerDigits == 0 ? "0" : String(random.next() % 9 + 1) + digits(integerDigits - 1)
            let sign = random.next() % 4 == 0 ? "-" : ""
            return sign + integer + (fractionDigits == 0 ? "" : "." + digits(fractionDigits))
        }
        for text in fixed + generated {
            let line =
                #"{"decision":{"errors":[],"nanoseconds":5,"recorded":[],"recordedCategories":[],"verdict":"pass"},"#
                + #""id":"E621E1F8-C36C-495A-93FC-0C247A3E6E5F","outcome":{"durationMilliseconds":"# + text
                + #","kind":"response","redirects":[]},"request":{"headers":[],"host":"a.test","method":"GET","#
                + #""url":"https://a.test/"},"schema":1,"time":"2026-11-21T10:00:00Z"}"#
            let fast = try #require(fastDecode(line), "\(text)")
            let expected = try #require(Double(text))
            #expect(fast.outcome.durationMilliseconds.bitPattern == expected.bitPattern, "\(text)")
            #expect(fast == (try slowDecode(line).get()), "\(text)")
        }
    }

    @Test("the fast path reads the writer's times to the millisecond, across leap years and centuries")
    func times() {
        let cases: [(String, Double)] = [
            ("1970-01-01T00:00:00.000Z", 0), ("2000-02-29T23:59:59.999Z", 951_868_799.999),
            ("2100-03-01T00:00:00Z", 4_107_542_400), ("1969-12-31T23:59:59.500Z", -0.5),
            ("2026-11-21T19:53:12.565Z", 1_795_290_792.565),
        ]
        for (text, seconds) in cases {
            #expect(AuditLogLineDecoder.time(text) == Date(timeIntervalSince1970: seconds), "\(text)")
        }
        #expect(AuditLogLineDecoder.time("2025-02-29T00:00:00Z") == nil)
        #expect(AuditLogLineDecoder.time("2026-11-21T24:00:00Z") == nil)
    }

    @Test("a log of many megabytes is read in order across read boundaries, bad lines at their own numbers")
    func manyMegabytes() throws {
        let count = 12_000
        let lines = try (0..<count).map { index -> String in
            index == 7_001 ? "{\"schema\":" : index == 9_000 ? "" : try sampleRecord(index).jsonLine()
        }
        let torn = String(try sampleRecord(count).jsonLine().prefix(60))
        let path = try temporaryLogPath()
        try Data((lines.joined(separator: "\n") + "\n" + torn).utf8).write(to: URL(fileURLWithPath: path))
        #expect(try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int ?? 0 > 4 << 20)
        let (records, problems) = try AuditLogReader.read(atPath: path)
        let expected = (0..<count).filter { $0 != 7_001 && $0 != 9_000 }
        #expect(records.compactMap(\.outcome.bytes) == expected)
        #expect(problems.map(\.line) == [7_002, count + 1])
        #expect(problems.map(\.isTornLastLine) == [false, true])
    }

    @Test("a value nested 100,000 deep under an unknown key is a skipped line, not a crash")
    func deepNesting() throws {
        let line =
            try sampleRecord(1).jsonLine().dropLast() + #","deep":"# + String(repeating: "[", count: 100_000)
            + String(repeating: "]", count: 100_000) + "}"
        let path = try temporaryLogPath()
        try Data((line + "\n" + sampleRecord(2).jsonLine() + "\n").utf8).write(to: URL(fileURLWithPath: path))
        let (records, problems) = try AuditLogReader.read(atPath: path)
        #expect(records.count == 1)
        #expect(problems.map(\.line) == [1])
    }
}
