import AuditPolicy
import Foundation
import Testing

@testable import AuditReport

private func jsonEncoderLine(_ record: AuditRecord) throws -> String {
    String(decoding: try AuditLogCoding.encoder().encode(record), as: UTF8.self)
}

@Suite struct AuditLogLineEncoderTests {
    @Test("every record is written byte for byte as JSONEncoder writes it")
    func recordsMatchJSONEncoder() throws {
        var random = SplitMix64(state: 2027)
        for _ in 0..<3_000 {
            let record = randomRecord(&random)
            let line = try #require(AuditLogLineEncoder.line(record))
            #expect(line == (try jsonEncoderLine(record)))
        }
    }

    @Test("durations are numbers as JSONEncoder formats them: shortest form, no trailing .0, exponents kept")
    func durations() throws {
        var random = SplitMix64(state: 7)
        let fixed: [Double] = [
            0, -0.0, 1, 0.1, 1e-7, 1e16, 1e21, 123_456.789, .leastNonzeroMagnitude, .greatestFiniteMagnitude,
        ]
        let generated = (0..<2_000).map { _ in Double(bitPattern: random.next()) }.filter(\.isFinite)
        var record = try sampleRecord(1)
        for duration in fixed + generated {
            record.outcome.durationMilliseconds = duration
            #expect(AuditLogLineEncoder.line(record) == (try jsonEncoderLine(record)), "\(duration)")
        }
    }

    @Test("times are written as the log's date format writes them, rounded to the millisecond, up to year 9999")
    func times() {
        var random = SplitMix64(state: 9)
        let fixed: [Double] = [0, 0.0004, 0.0005, 951_782_400, 951_868_799.9996, 4_107_542_400, 253_402_300_799.999]
        let generated = (0..<5_000).map { _ in Double(random.next() % 253_402_300_800_000) / 1_000 + 0.000_3 }
        for seconds in fixed + generated {
            let date = Date(timeIntervalSince1970: seconds)
            #expect(AuditLogLineEncoder.timestamp(date) == AuditLogCoding.timestamp(date), "\(seconds)")
        }
    }

    @Test("records it cannot write the same way are left to JSONEncoder, which still writes or refuses them")
    func leftToJSONEncoder() throws {
        var early = try sampleRecord(1)
        early.time = Date(timeIntervalSince1970: -86_400.5)
        #expect(AuditLogLineEncoder.line(early) == nil)
        #expect(try early.jsonLine() == (try jsonEncoderLine(early)))
        var endless = try sampleRecord(2)
        endless.outcome.durationMilliseconds = .infinity
        #expect(AuditLogLineEncoder.line(endless) == nil)
        #expect(throws: EncodingError.self) { try endless.jsonLine() }
    }
}

@Suite struct AuditLogTimestampTests {
    @Test("a time before 1970 is written with its milliseconds, not a crash, and reads back")
    func before1970() throws {
        let date = Date(timeIntervalSince1970: -86_400.5)
        #expect(AuditLogCoding.timestamp(date) == "1969-12-30T23:59:59.500Z")
        var record = try sampleRecord(1)
        record.time = date
        let decoded = try AuditLogCoding.decoder().decode(AuditRecord.self, from: Data(try record.jsonLine().utf8))
        #expect(decoded.time == date)
    }
}
