import AuditPolicy
import AuditReport
import Foundation
import Testing

private func verify(_ path: String, key: [UInt8]? = nil) throws -> AuditLogVerification {
    try AuditLogVerifier.verify(files: AuditLogVerifier.files(forLog: path), key: key)
}

/// `line` re-sealed as a forger would: `body` chained from `previous` digest (hex) with SHA-256 or
/// an HMAC under `key`.
private func forge(_ object: String, sequence: Int, after previousDigest: [UInt8], key: [UInt8]? = nil) -> String {
    var chain = LogChain(sequence: sequence - 1, digest: previousDigest, key: key)
    return chain.seal(object)
}

@Suite struct LogChainTests {
    @Test("every line carries seq and a digest, and an independent Python check of the documented chain agrees")
    func pythonAgrees() async throws {
        let path = try await writeSealedLog(40)
        let written = try logLines(path)
        #expect(written.count == 40)
        #expect(written.enumerated().allSatisfy { $1.contains(#","seq":\#($0 + 1),"chain":""#) })
        let script = #"""
            import hashlib, re, sys
            prev = "0" * 64
            for line in open(sys.argv[1], "rb").read().split(b"\n"):
                if not line: continue
                m = re.search(rb',"chain":"([0-9a-f]{64})"\}$', line)
                d = hashlib.sha256(prev.encode() + b"\n" + line[:m.start()] + b"}").hexdigest()
                assert d == m.group(1).decode(), line[:60]
                prev = d
            print(prev)
            """#
        let python = Process()
        python.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        python.arguments = ["python3", "-c", script, path]
        let pipe = Pipe()
        python.standardOutput = pipe
        try python.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        python.waitUntilExit()
        let result = try verify(path)
        #expect(python.terminationStatus == 0)
        #expect(output.trimmingCharacters(in: .whitespacesAndNewlines) == result.lastDigest.map { hex($0) })
        #expect(result.isIntact)
        #expect(result.records == 40)
        #expect(result.firstSequence == 1 && result.lastSequence == 40)
    }

    @Test("a byte edited in a record is found at its line")
    func byteEdited() async throws {
        let path = try await writeSealedLog(30)
        var text = try logLines(path)
        text[16] = text[16].replacingOccurrences(of: #""status":200"#, with: #""status":204"#)
        try writeLogLines(text, to: path)
        let result = try verify(path)
        #expect(result.problems.map(\.description).first?.hasPrefix("\(path):17: edited:") == true)
        #expect(result.problems.count == 1)
    }

    @Test("a deleted line is found where it was")
    func lineDeleted() async throws {
        let path = try await writeSealedLog(30)
        var text = try logLines(path)
        text.remove(at: 9)
        try writeLogLines(text, to: path)
        let result = try verify(path)
        #expect(result.problems.map(\.kind) == [.removed])
        #expect(result.problems.first?.line == 10)
        #expect(result.problems.first?.message.hasPrefix("seq 10…10 missing") == true)
    }

    @Test("two swapped lines are found as reordered at the first of them")
    func linesSwapped() async throws {
        let path = try await writeSealedLog(30)
        var text = try logLines(path)
        text.swapAt(20, 21)
        try writeLogLines(text, to: path)
        let result = try verify(path)
        #expect(result.problems.first?.kind == .reordered)
        #expect(result.problems.first?.line == 21)
    }

    @Test("a rotated file cut short is found at the start of the next file")
    func rotatedFileCut() async throws {
        let lineLength = try sampleRecord(10).jsonLine().utf8.count + 100
        let path = try await writeSealedLog(40, rotation: LogRotation(maxBytes: lineLength * 10, keep: .max))
        let files = AuditLogVerifier.files(forLog: path)
        let cut = files[1]
        var text = try logLines(cut)
        text.removeLast(3)
        try writeLogLines(text, to: cut)
        let result = try verify(path)
        #expect(result.problems.map(\.kind) == [.removed])
        #expect(result.problems.first?.file == files[2])
        #expect(result.problems.first?.line == 1)
    }

    @Test("a torn last line is reported as torn, not as tampering")
    func tornLastLine() async throws {
        let path = try await writeSealedLog(20)
        var text = try logLines(path)
        text[19] = String(text[19].prefix(120))
        try writeLogLines(text, to: path, newline: false)
        let result = try verify(path)
        #expect(result.isIntact)
        #expect(result.tornLines.map(\.line) == [20])
        #expect(result.lastSequence == 19)
    }

    @Test("a forged line put in without a key is found at the forged line")
    func forgedPlain() async throws {
        let path = try await writeSealedLog(30)
        var text = try logLines(path)
        let previous = try #require(SealedLine(Array(text[11].utf8)[...]))
        let object = try sampleRecord(99).jsonLine()
        text.insert(forge(object, sequence: previous.sequence + 1, after: previous.digest), at: 12)
        try writeLogLines(text, to: path)
        let result = try verify(path)
        #expect(result.problems.first?.kind == .inserted)
        #expect(result.problems.first?.line == 13)
    }

    @Test("with an HMAC key, a forged line (made without the key) is found at that line")
    func forgedHMAC() async throws {
        let key = Array("the log's key".utf8)
        let path = try await writeSealedLog(30, key: key)
        #expect(try verify(path, key: key).isIntact)
        var text = try logLines(path)
        let previous = try #require(SealedLine(Array(text[11].utf8)[...]))
        let object = try sampleRecord(99).jsonLine()
        text.insert(
            forge(object, sequence: previous.sequence + 1, after: previous.digest, key: Array("guess".utf8)), at: 12)
        try writeLogLines(text, to: path)
        let result = try verify(path, key: key)
        #expect(result.problems.first?.kind == .edited)
        #expect(result.problems.first?.line == 13)
        #expect(result.problems.first?.message.contains("forged without the key") == true)
    }

    @Test("an HMAC-sealed log checked with the wrong key fails at its first line")
    func wrongKey() async throws {
        let path = try await writeSealedLog(5, key: Array("right".utf8))
        let result = try verify(path, key: Array("wrong".utf8))
        #expect(result.problems.first?.line == 1)
        #expect(!result.isIntact)
    }

    @Test("the chain goes on across rotation and across a restart of the writer")
    func rotationAndRestart() async throws {
        let lineLength = try sampleRecord(10).jsonLine().utf8.count + 100
        let rotation = LogRotation(maxBytes: lineLength * 10, keep: .max)
        let path = try await writeSealedLog(25, rotation: rotation)
        _ = try await writeSealedLog(25, rotation: rotation, at: path)
        let result = try verify(path)
        #expect(result.isIntact, "\(result.problems)")
        #expect(result.records == 50)
        #expect(result.firstSequence == 1 && result.lastSequence == 50)
        #expect(result.files.count >= 5)
    }

    @Test("deleting old files is noted in the log: the rest still verifies, and the count rotated away is known")
    func deletionNoted() async throws {
        let lineLength = try sampleRecord(10).jsonLine().utf8.count + 100
        let path = try await writeSealedLog(60, rotation: LogRotation(maxBytes: lineLength * 10, keep: 2))
        let result = try verify(path)
        #expect(result.isIntact, "\(result.problems)")
        #expect(result.records + result.recordsRotatedAway == 60)
        #expect(result.recordsRotatedAway > 0)
        #expect(result.rotatedAway.allSatisfy { $0.file.hasPrefix(path + ".") })
        let kept = try AuditLogVerifier.files(forLog: path).flatMap { try AuditLogReader.read(atPath: $0).records }
        #expect(kept.count == result.records)
    }

    @Test("a log whose oldest lines vanished without a note is reported missing them")
    func unnotedDeletion() async throws {
        let path = try await writeSealedLog(20)
        var text = try logLines(path)
        text.removeFirst(5)
        try writeLogLines(text, to: path)
        let result = try verify(path)
        #expect(result.problems.map(\.kind) == [.removed])
        #expect(result.problems.first?.message.hasPrefix("seq 1…5 missing before the first line") == true)
    }

    @Test("an anchor published earlier is found, and one the log lost is reported")
    func anchors() async throws {
        let path = try await writeSealedLog(10)
        let digest = try #require(try verify(path).lastDigest)
        #expect(try AuditLogVerifier.verify(files: [path], anchor: digest).isIntact)
        var text = try logLines(path)
        text.removeLast()
        try writeLogLines(text, to: path)
        let cut = try AuditLogVerifier.verify(files: [path], anchor: digest)
        #expect(cut.problems.map(\.kind) == [.anchorMissing])
    }

    private func hex(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }
}
