import AuditPolicy
import AuditReport
import Foundation

/// A log of `count` records written by the real writer; returns its path.
func writeSealedLog(
    _ count: Int, rotation: LogRotation = .keepingEverything, key: [UInt8]? = nil, at path: String? = nil
) async throws -> String {
    let path = try path ?? temporaryLogPath()
    let writer = try AuditLogWriter(path: path, rotation: rotation, chainKey: key)
    for index in 0..<count { try writer.append(try sampleRecord(index)) }
    try await writer.shutdown()
    return path
}

func logLines(_ path: String) throws -> [String] {
    try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n").map(String.init)
}

func writeLogLines(_ lines: [String], to path: String, newline: Bool = true) throws {
    try Data((lines.joined(separator: "\n") + (newline ? "\n" : "")).utf8).write(to: URL(fileURLWithPath: path))
}
