import AuditPolicy
import AuditReport
import Foundation
import Testing

/// A record for request number `index`.
func sampleRecord(_ index: Int, verdict: Verdict.Action = .pass) throws -> AuditRecord {
    let policy = try Policy(parsing: "[record]\nall .", file: "s.rules")
    let decided = policy.evaluate(AuditRequest(url: "https://example.test/\(index)"))
    return AuditRecord(
        id: UUID(), time: Date(timeIntervalSince1970: 1_800_000_000 + Double(index)),
        request: RequestSnapshot(
            method: "GET", url: "https://example.test/\(index)", host: "example.test", headers: []),
        decision: DecisionSnapshot(decided, nanoseconds: 1_500),
        outcome: OutcomeSnapshot(kind: .response, status: 200, bytes: index, durationMilliseconds: 2.5)
    )
}

func temporaryLogPath() throws -> String {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ra-log-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return folder.appendingPathComponent("audit.jsonl").path
}

@Suite struct AuditLogTests {
    @Test("records round-trip through the log exactly, one JSON object per line, with a schema version")
    func roundTrip() async throws {
        let path = try temporaryLogPath()
        let writer = try AuditLogWriter(path: path)
        let records = try (0..<3).map { try sampleRecord($0) }
        for record in records { try writer.append(record) }
        try await writer.shutdown()
        let (read, problems) = try AuditLogReader.read(atPath: path)
        #expect(problems.isEmpty)
        #expect(read == records)
        let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 3)
        #expect(lines.allSatisfy { $0.hasPrefix("{") && $0.contains(#""schema":1"#) })
        #expect(lines.first?.contains(#""time":"2027-01-15T08:00:00.000Z""#) == true)
        #expect(lines.last?.contains(#""time":"2027-01-15T08:00:02.000Z""#) == true)
    }

    @Test("times are written as UTC with whole milliseconds and read back equal")
    func timePrecision() throws {
        var record = try sampleRecord(1)
        record.time = Date(timeIntervalSince1970: 1_800_000_000.1239).roundedToAuditLogPrecision
        let line = try record.jsonLine()
        #expect(line.contains(#""time":"2027-01-15T08:00:00.124Z""#))
        let path = try temporaryLogPath()
        try Data((line + "\n").utf8).write(to: URL(fileURLWithPath: path))
        #expect(try AuditLogReader.read(atPath: path).records == [record])
    }

    @Test("appends from many tasks at once are all written, none twice")
    func concurrentAppends() async throws {
        let path = try temporaryLogPath()
        let writer = try AuditLogWriter(path: path)
        let records = try (0..<2_000).map { try sampleRecord($0) }
        await withTaskGroup(of: Void.self) { group in
            for record in records { group.addTask { try? writer.append(record) } }
        }
        try await writer.shutdown()
        let read = try AuditLogReader.read(atPath: path).records
        #expect(read.count == 2_000)
        #expect(Set(read.map(\.id)) == Set(records.map(\.id)))
        #expect(writer.writtenCount == 2_000)
    }

    @Test("a torn last line is reported as such and skipped; every complete record is read")
    func tornLastLine() throws {
        let path = try temporaryLogPath()
        let complete = try [sampleRecord(1), sampleRecord(2)].map { try $0.jsonLine() }.joined(separator: "\n") + "\n"
        let torn = String(try sampleRecord(3).jsonLine().prefix(40))
        try Data((complete + torn).utf8).write(to: URL(fileURLWithPath: path))
        let (records, problems) = try AuditLogReader.read(atPath: path)
        #expect(records.count == 2)
        #expect(problems.count == 1)
        #expect(problems.first?.line == 3)
        #expect(problems.first?.isTornLastLine == true)
        #expect(problems.first?.description.hasPrefix("\(path):3: skipped torn last line: not valid JSON") == true)
    }

    @Test("an invalid line in the middle is reported with its number and the rest is read")
    func invalidMiddleLine() throws {
        let path = try temporaryLogPath()
        let text =
            try [sampleRecord(1).jsonLine(), #"{"schema":1}"#, "garbage", sampleRecord(2).jsonLine()]
            .joined(separator: "\n") + "\n"
        try Data(text.utf8).write(to: URL(fileURLWithPath: path))
        let (records, problems) = try AuditLogReader.read(atPath: path)
        #expect(records.count == 2)
        #expect(problems.map(\.line) == [2, 3])
        #expect(problems.map(\.isTornLastLine) == [false, false])
        #expect(problems.map(\.reason) == ["missing field 'id'", "not valid JSON at column 1: invalid value"])
    }

    @Test("the log rotates by size, and keeping every file keeps every record in order")
    func rotation() async throws {
        let path = try temporaryLogPath()
        let lineLength = try sampleRecord(10).jsonLine().utf8.count + 100
        let writer = try AuditLogWriter(
            path: path, rotation: LogRotation(maxBytes: lineLength * 10, keep: LogRotation.keepEverything))
        for index in 10..<45 { try writer.append(try sampleRecord(index)) }
        try await writer.shutdown()
        let files = AuditLogVerifier.files(forLog: path)
        #expect(files.count >= 4)
        #expect(try files.allSatisfy { try Data(contentsOf: URL(fileURLWithPath: $0)).count <= lineLength * 10 })
        let order = try files.flatMap { try AuditLogReader.read(atPath: $0).records.compactMap(\.outcome.bytes) }
        #expect(order == Array(10..<45))
    }

    @Test("a full disk keeps every line queued, says why, and makes shutdown fail rather than drop them")
    func fullDisk() async throws {
        // /dev/full accepts the open and refuses every write with ENOSPC.
        let writer = try AuditLogWriter(path: "/dev/full")
        for index in 0..<3 { try writer.append(try sampleRecord(index)) }
        await writer.flush()
        #expect(writer.writtenCount == 0)
        let error = try #require(writer.lastError)
        guard case .writeFailed(let path, let reason) = error else {
            Issue.record("expected a write failure, got \(error)")
            return
        }
        #expect(path == "/dev/full")
        #expect(reason.contains("space"))
        await #expect(throws: error) { try await writer.shutdown() }
    }

    @Test("a record that cannot be encoded is left out and named in lastError; the records around it are written")
    func unencodableRecord() async throws {
        let path = try temporaryLogPath()
        let writer = try AuditLogWriter(path: path)
        var broken = try sampleRecord(1)
        broken.outcome.durationMilliseconds = .nan
        for record in [try sampleRecord(0), broken, try sampleRecord(2)] { try writer.append(record) }
        await writer.flush()
        #expect(try AuditLogReader.read(atPath: path).records.compactMap(\.outcome.bytes) == [0, 2])
        let error = try #require(writer.lastError)
        guard case .writeFailed(let failedPath, let reason) = error else {
            Issue.record("expected a write failure, got \(error)")
            return
        }
        #expect(failedPath == path)
        #expect(reason.hasPrefix("cannot encode record \(broken.id)"))
        // Later writes that succeed do not hide it: that record is lost.
        try writer.append(try sampleRecord(3))
        await writer.flush()
        #expect(writer.lastError == error)
        #expect(writer.writtenCount == 3)
    }

    @Test("lines appended while earlier ones are being written all reach the file, in order")
    func appendsDuringWrites() async throws {
        let path = try temporaryLogPath()
        let writer = try AuditLogWriter(path: path)
        for index in 0..<5_000 { try writer.append(try sampleRecord(index)) }
        try await writer.shutdown()
        let order = try AuditLogReader.read(atPath: path).records.compactMap(\.outcome.bytes)
        #expect(order == Array(0..<5_000))
        #expect(writer.writtenCount == 5_000)
    }

    @Test("a new log is readable by its owner only; appending after shutdown is an error")
    func permissionsAndClosed() async throws {
        let path = try temporaryLogPath()
        let writer = try AuditLogWriter(path: path)
        try await writer.shutdown()
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) == 0o600)
        #expect(throws: AuditLogError.closed(path: path)) { try writer.append(try sampleRecord(1)) }
    }

    @Test("a log that cannot be created is a clear error")
    func cannotOpen() {
        #expect(
            throws: AuditLogError.cannotOpen(path: "/nonexistent/dir/audit.jsonl", reason: "cannot create the file")
        ) {
            try AuditLogWriter(path: "/nonexistent/dir/audit.jsonl")
        }
    }
}
