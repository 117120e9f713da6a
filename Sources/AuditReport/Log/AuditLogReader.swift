import Foundation

/// A line of an audit log that is not a valid record.
public struct AuditLogProblem: Sendable, Equatable, CustomStringConvertible {
    /// The log file.
    public let file: String
    /// 1-based line number.
    public let line: Int
    /// Why the line was skipped.
    public let reason: String
    /// Whether this is an unterminated last line, as left by a crash mid-write.
    public let isTornLastLine: Bool

    /// `file:line: skipped …`.
    public var description: String {
        "\(file):\(line): skipped \(isTornLastLine ? "torn last line" : "invalid line"): \(reason)"
    }
}

/// Reads audit logs line by line, in constant memory, skipping and reporting lines that are not
/// valid records (never crashing on them).
public enum AuditLogReader {
    /// Calls `body` with each valid record of the log at `path`, in order, and returns the problems.
    ///
    /// - Throws: ``AuditLogError/cannotOpen(path:reason:)``, or whatever `body` throws.
    /// A log whose name ends in `.gz` is decompressed on the fly (through `gzip -dc`), so
    /// compressed logs stream in constant memory too. `onBytesRead` is told the bytes read so far
    /// (decompressed), for progress displays.
    @discardableResult
    public static func forEachRecord(
        atPath path: String, onBytesRead: ((Int) -> Void)? = nil, _ body: (AuditRecord) throws -> Void
    ) throws -> [AuditLogProblem] {
        let (handle, decompressor) = try open(path)
        defer {
            try? handle.close()
            decompressor?.terminate()
            decompressor?.waitUntilExit()
        }
        let decoder = AuditLogCoding.decoder()
        var problems: [AuditLogProblem] = []
        var buffer: [UInt8] = []
        var lineNumber = 0

        func decodeLine(_ line: ArraySlice<UInt8>, terminated: Bool) throws {
            lineNumber += 1
            guard !line.isEmpty else { return }
            if let record = AuditLogLineDecoder.decode(line) {
                try body(record)
                return
            }
            do {
                try body(try decoder.decode(AuditRecord.self, from: Data(line)))
            } catch let error as DecodingError {
                problems.append(
                    AuditLogProblem(
                        file: path, line: lineNumber, reason: Self.describe(error), isTornLastLine: !terminated
                    )
                )
            }
        }

        var bytesRead = 0
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            bytesRead += chunk.count
            onBytesRead?(bytesRead)
            buffer.append(contentsOf: chunk)
            var start = 0
            while let newline = buffer[start...].firstIndex(of: UInt8(ascii: "\n")) {
                try decodeLine(buffer[start..<newline], terminated: true)
                start = newline + 1
            }
            buffer.removeFirst(start)
        }
        if !buffer.isEmpty { try decodeLine(buffer[...], terminated: false) }
        if let decompressor {
            decompressor.waitUntilExit()
            if decompressor.terminationStatus != 0 {
                throw AuditLogError.cannotOpen(path: path, reason: "not a valid gzip file")
            }
        }
        return problems
    }

    /// The file's bytes, decompressed through `gzip -dc` when its name ends in `.gz`.
    private static func open(_ path: String) throws -> (FileHandle, Process?) {
        guard FileManager.default.isReadableFile(atPath: path) else {
            throw AuditLogError.cannotOpen(path: path, reason: "cannot open the file for reading")
        }
        guard path.hasSuffix(".gz") else {
            guard let handle = FileHandle(forReadingAtPath: path) else {
                throw AuditLogError.cannotOpen(path: path, reason: "cannot open the file for reading")
            }
            return (handle, nil)
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["gzip", "-dc", "--", path]
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw AuditLogError.cannotOpen(path: path, reason: "cannot run gzip: \(error)")
        }
        return (pipe.fileHandleForReading, process)
    }

    /// Every valid record of the log at `path` and the problems found.
    public static func read(atPath path: String) throws -> (records: [AuditRecord], problems: [AuditLogProblem]) {
        var records: [AuditRecord] = []
        let problems = try forEachRecord(atPath: path) { records.append($0) }
        return (records, problems)
    }

    private static func describe(_ error: DecodingError) -> String {
        switch error {
        case .dataCorrupted(let context): "not valid JSON (\(context.debugDescription))"
        case .keyNotFound(let key, _): "missing field '\(key.stringValue)'"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            "wrong type at '\(context.codingPath.map(\.stringValue).joined(separator: "."))'"
        @unknown default: "\(error)"
        }
    }
}
