import Foundation
import Testing

@testable import AuditReport

/// How the writer gathers records that arrive while it is busy (`batchInterval`).
@Suite struct AuditLogBatchingTests {
    /// Waits (up to 10 s) until `condition` holds.
    private func eventually(_ condition: () -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            try #require(ContinuousClock.now < deadline, "timed out")
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    @Test("a record arriving while the writer is idle wakes it and is written at once")
    func idleWriterWakes() async throws {
        let writer = try AuditLogWriter(path: try temporaryLogPath(), batchInterval: .seconds(3_600))
        try writer.append(try sampleRecord(0))
        try await eventually { writer.writtenCount == 1 }
        #expect(writer.wakeUpCount == 1)
        try await writer.shutdown()
    }

    @Test("records arriving after a write wait for the writer's next look instead of waking it")
    func recordsAfterAWriteDoNotWake() async throws {
        let path = try temporaryLogPath()
        // An hour: the writer's next look cannot come while the test runs, however loaded the machine.
        let writer = try AuditLogWriter(path: path, batchInterval: .seconds(3_600))
        let later = try (1...100).map { try sampleRecord($0) }
        try writer.append(try sampleRecord(0))
        try await eventually { writer.writtenCount == 1 }
        for record in later { try writer.append(record) }
        try await Task.sleep(for: .milliseconds(100))
        #expect(writer.writtenCount == 1)
        #expect(writer.wakeUpCount == 1)
        await writer.flush()
        #expect(writer.writtenCount == 101)
        try await writer.shutdown()
        #expect(try AuditLogReader.read(atPath: path).records.compactMap(\.outcome.bytes) == Array(0...100))
    }

    @Test("a record that waits for the writer's next look is written then, without a flush")
    func nextLookWrites() async throws {
        let writer = try AuditLogWriter(path: try temporaryLogPath(), batchInterval: .milliseconds(20))
        try writer.append(try sampleRecord(0))
        try await eventually { writer.writtenCount == 1 }
        // Whether it waits for the look or (the test having slept past it) wakes the writer, it is written.
        try writer.append(try sampleRecord(1))
        try await eventually { writer.writtenCount == 2 }
        try await writer.shutdown()
    }

    @Test("a look that finds nothing leaves the writer idle, and the next record wakes it again")
    func emptyLookGoesIdle() async throws {
        let writer = try AuditLogWriter(path: try temporaryLogPath(), batchInterval: .milliseconds(20))
        try writer.append(try sampleRecord(0))
        try await eventually { writer.writtenCount == 1 && writer.isIdle }
        try writer.append(try sampleRecord(1))
        #expect(writer.wakeUpCount == 2)
        try await eventually { writer.writtenCount == 2 }
        try await writer.shutdown()
    }
}
