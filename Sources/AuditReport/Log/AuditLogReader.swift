import AuditLocking
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
        var lineNumber = 0

        /// Hands one line to `body`: the fast decoder's record, or `JSONDecoder`'s verdict on it.
        func deliver(_ line: ArraySlice<UInt8>, decoded: AuditRecord?, terminated: Bool) throws {
            lineNumber += 1
            guard !line.isEmpty else { return }
            if let decoded {
                try body(decoded)
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

        // While `body` gets the records of one megabyte, the next megabyte is decoded on the other
        // cores; records still reach `body` one at a time, in order, on this thread.
        var leftover: [UInt8] = []
        var previous: LineBatch?
        var bytesRead = 0
        while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty {
            bytesRead += chunk.count
            onBytesRead?(bytesRead)
            let batch = LineBatch(leftover + chunk)
            leftover = batch.leftover
            batch.startDecoding()
            defer { batch.waitForDecoding() }
            try previous?.forEachLine { try deliver($0, decoded: $1, terminated: true) }
            batch.waitForDecoding()
            previous = batch
        }
        try previous?.forEachLine { try deliver($0, decoded: $1, terminated: true) }
        if !leftover.isEmpty {
            try deliver(leftover[...], decoded: AuditLogLineDecoder.decode(leftover[...]), terminated: false)
        }
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

/// The complete lines of one read from a log, decoded in the background by the fast decoder.
private final class LineBatch: @unchecked Sendable {
    // @unchecked: `bytes`, `lineRanges` and `leftover` are set in `init` and never change;
    // `decoded` is written by the decoding work only and read only after `waitForDecoding()` has
    // seen it finish.
    private let bytes: [UInt8]
    private let lineRanges: [Range<Int>]
    /// The bytes after the last newline, which the next read completes.
    let leftover: [UInt8]
    private let decoded = Locked<[[AuditRecord?]]>([[], []])
    private let finished = DispatchSemaphore(value: 0)
    private var isDecoding = false

    init(_ bytes: [UInt8]) {
        var lineRanges: [Range<Int>] = []
        var start = 0
        bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            while start < buffer.count,
                let found = memchr(base + start, Int32(UInt8(ascii: "\n")), buffer.count - start)
            {
                let newline = UnsafeRawPointer(found) - UnsafeRawPointer(base)
                lineRanges.append(start..<newline)
                start = newline + 1
            }
        }
        self.bytes = bytes
        self.lineRanges = lineRanges
        self.leftover = Array(bytes[start...])
    }

    /// Decodes every line on the other cores (each line's record, or nil for `JSONDecoder`).
    func startDecoding() {
        isDecoding = true
        DispatchQueue.global().async { [self] in
            let parts = 2
            DispatchQueue.concurrentPerform(iterations: parts) { part in
                let ranges = lineRanges[(lineRanges.count * part / parts)..<(lineRanges.count * (part + 1) / parts)]
                guard let first = ranges.first, let last = ranges.last else { return }
                // Each part reads its own copy, so the two never share (and contend for) one
                // array's reference count.
                let own = Array(bytes[first.lowerBound..<last.upperBound])
                let records = ranges.map { range in
                    AuditLogLineDecoder.decode(
                        own[(range.lowerBound - first.lowerBound)..<(range.upperBound - first.lowerBound)])
                }
                decoded.withLock { $0[part] = records }
            }
            finished.signal()
        }
    }

    /// Waits until `startDecoding()`'s work is done (at once if it never started or was waited for).
    func waitForDecoding() {
        guard isDecoding else { return }
        finished.wait()
        isDecoding = false
    }

    /// Calls `body` with each complete line, in order, and its record from the fast decoder (nil:
    /// not decoded); call after `waitForDecoding()`. The line is passed lazily: a decoded record
    /// rarely needs it.
    func forEachLine(_ body: (ArraySlice<UInt8>, AuditRecord?) throws -> Void) throws {
        let parts = decoded.withLock { parts in
            defer { parts = [] }
            return parts
        }
        var index = 0
        for part in parts {
            for record in part {
                try body(bytes[lineRanges[index]], record)
                index += 1
            }
        }
    }
}
