import AuditPolicy
import AuditReport
import Foundation
import Testing

/// `audit report` checks each log's sequence numbers in the pass that counts its records; these
/// tests pin that it finds exactly what `AuditLogVerifier` finds without digests.
@Suite struct ReportSequenceTests {
    /// A change made to the oldest file of a sealed log of 6,000 records rotated about every
    /// 2,500 (megabytes, so the report reads each file in several pieces and many runs of lines).
    enum Change: String, CaseIterable, CustomTestStringConvertible, Sendable {
        case none, lineRemoved, linesSwapped, lineRepeated, rotatedFileCut, oldestLinesRemoved, tornLastLine
        case unsealedRecordPutIn, tornLineAmidSealed, oldFilesDeleted

        var testDescription: String { rawValue }
    }

    /// The log, changed; returns its path and the 1-based line of the oldest file where the
    /// change was made (near its end, past the report's first read of a megabyte).
    private func changedLog(_ change: Change) async throws -> (path: String, line: Int) {
        let lineLength = try sampleRecord(10).jsonLine().utf8.count + 100
        let keep = change == .oldFilesDeleted ? 1 : Int.max
        let path = try await writeSealedLog(6_000, rotation: LogRotation(maxBytes: lineLength * 2_500, keep: keep))
        let files = AuditLogVerifier.files(forLog: path)
        let oldest = files[0]
        var text = try logLines(oldest)
        let at = text.count - 100
        switch change {
        case .none, .oldFilesDeleted: return (path, 0)
        case .lineRemoved: text.remove(at: at)
        case .linesSwapped: text.swapAt(at, at + 1)
        case .lineRepeated: text.insert(text[at - 1], at: at)
        case .rotatedFileCut: text.removeLast(7)
        case .oldestLinesRemoved: text.removeFirst(300)
        case .tornLastLine:
            let last = try #require(files.last)
            var lastText = try logLines(last)
            lastText[lastText.count - 1] = String(lastText[lastText.count - 1].prefix(150))
            try writeLogLines(lastText, to: last, newline: false)
            return (path, lastText.count)
        case .unsealedRecordPutIn: text.insert(try sampleRecord(77).jsonLine(), at: at)
        case .tornLineAmidSealed: text.insert(String(text[at].prefix(90)), at: at)
        }
        try writeLogLines(text, to: oldest)
        return (path, at + 1)
    }

    @Test("a report finds in the log's sequence numbers what verify finds without digests", arguments: Change.allCases)
    func sameAsVerify(_ change: Change) async throws {
        let path = try await changedLog(change).path
        let expected = try AuditLogVerifier.verify(files: AuditLogVerifier.files(forLog: path), checkDigests: false)
        let reading = try ReportWriter().summarize(logs: [path])
        #expect(reading.sequences.count == 1)
        let found = try #require(reading.sequences.first)
        #expect(found.problems == expected.problems)
        #expect(found.files == expected.files)
        #expect(found.tornLines.map { "\($0.file):\($0.line)" } == expected.tornLines.map { "\($0.file):\($0.line)" })
        #expect(found.records == expected.records)
        #expect(found.sealedLines == expected.sealedLines)
        #expect(found.unsealedPrefix == expected.unsealedPrefix)
        #expect(found.firstSequence == expected.firstSequence)
        #expect(found.lastSequence == expected.lastSequence)
        #expect(found.lastDigest == expected.lastDigest)
        #expect(found.rotatedAway == expected.rotatedAway)
        #expect(found.checkedDigests == false)
        #expect(expected.isIntact == [.none, .oldFilesDeleted, .tornLastLine, .tornLineAmidSealed].contains(change))
    }

    @Test("each change is found at its line", arguments: Change.allCases)
    func changeFound(_ change: Change) async throws {
        let (path, line) = try await changedLog(change)
        let found = try #require(try ReportWriter().summarize(logs: [path]).sequences.first)
        let first = found.problems.first.map { ($0.kind, $0.line) }
        switch change {
        case .none, .oldFilesDeleted, .tornLastLine, .tornLineAmidSealed: #expect(found.problems.isEmpty)
        case .lineRemoved: #expect(first! == (.removed, line))
        case .linesSwapped: #expect(first! == (.reordered, line))
        // Without digests, either copy of a repeated line may be the one put in.
        case .lineRepeated: #expect(first! == (.inserted, line - 1))
        case .rotatedFileCut, .oldestLinesRemoved: #expect(first! == (.removed, 1))
        case .unsealedRecordPutIn: #expect(first! == (.unsealed, line))
        }
        switch change {
        case .tornLastLine: #expect(found.tornLines.map(\.line) == [line])
        case .tornLineAmidSealed: #expect(found.tornLines.map(\.line) == [line])
        default: #expect(found.tornLines.isEmpty)
        }
    }

    @Test("records rotation deleted are counted from the notes the log keeps")
    func rotatedAwayCounted() async throws {
        let path = try await changedLog(.oldFilesDeleted).path
        let reading = try ReportWriter().summarize(logs: [path])
        let sequence = try #require(reading.sequences.first)
        #expect(sequence.recordsRotatedAway > 0)
        #expect(sequence.records + sequence.recordsRotatedAway == 6_000)
        #expect(reading.report.totalRequests == sequence.records)
    }

    @Test("a gzip-compressed log is counted but its sequence numbers are not checked")
    func compressedNotChecked() async throws {
        let path = try await writeSealedLog(50)
        let gzip = Process()
        gzip.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        gzip.arguments = ["gzip", "-f", path]
        try gzip.run()
        gzip.waitUntilExit()
        let reading = try ReportWriter().summarize(logs: [path + ".gz"])
        #expect(reading.report.totalRequests == 50)
        #expect(reading.sequences.isEmpty)
    }
}
