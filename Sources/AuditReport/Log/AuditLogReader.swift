import AuditLocking
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

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
    /// The files that hold the records of the log at `path`, oldest first: its rotated files
    /// (`path.N` … `path.1`) and `path` itself; `path` alone when none of them exists (so that
    /// reading it says why).
    public static func files(ofLog path: String) -> [String] {
        let files = AuditLogVerifier.files(forLog: path)
        return files.isEmpty ? [path] : files
    }

    /// Calls `body` with each file of the log at `path` (``files(ofLog:)``), oldest first. What
    /// `body` throws is rethrown as an ``AuditLogError`` naming that file.
    public static func forEachFile(ofLog path: String, _ body: (String) throws -> Void) throws(AuditLogError) {
        for file in files(ofLog: path) {
            do {
                try body(file)
            } catch {
                throw error as? AuditLogError ?? .cannotOpen(path: file, reason: "\(error)")
            }
        }
    }

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
        try reduceRecords(
            atPath: path, onBytesRead: onBytesRead, into: { [AuditRecord]() }, add: { $0.append($1) },
            merge: { records in
                for record in records { try body(record) }
            })
    }

    /// Reads the log at `path` on every core: the lines are cut into runs, each run's valid records
    /// are added, in order, to a fresh `Partial` made by `makePartial`, on a worker thread; `merge`
    /// gets the runs' partials on the calling thread, in log order. Returns the problems, in order.
    ///
    /// Only a megabyte or two of the log is in memory at a time, so a summary built this way
    /// reads any size of log in constant memory. `audit report` summarizes this way, so that
    /// decoding and counting use every core.
    ///
    /// ```swift
    /// var total = 0
    /// let problems = try AuditLogReader.reduceRecords(
    ///     atPath: "audit.jsonl", into: { 0 }, add: { count, _ in count += 1 }, merge: { total += $0 })
    /// ```
    ///
    /// - Throws: ``AuditLogError/cannotOpen(path:reason:)``, or whatever `merge` throws.
    @discardableResult
    public static func reduceRecords<Partial: Sendable>(
        atPath path: String, onBytesRead: ((Int) -> Void)? = nil, into makePartial: @escaping @Sendable () -> Partial,
        add: @escaping @Sendable (inout Partial, AuditRecord) -> Void, merge: (Partial) throws -> Void
    ) throws -> [AuditLogProblem] {
        try reduceRecords(
            atPath: path, onBytesRead: onBytesRead, extent: .whole, into: makePartial, add: add, merge: merge,
            linking: nil)
    }

    /// ``reduceRecords(atPath:onBytesRead:into:add:merge:)`` with records decoded to `extent`, and
    /// `linking` gets each non-empty line's chain link (made on the worker threads, without the
    /// line's body), in log order on the calling thread, so that a summary checks sequence numbers
    /// in the same pass.
    static func reduceRecords<Partial: Sendable>(
        atPath path: String, onBytesRead: ((Int) -> Void)? = nil, extent: AuditLogLineDecoder.Extent,
        into makePartial: @escaping @Sendable () -> Partial,
        add: @escaping @Sendable (inout Partial, AuditRecord) -> Void, merge: (Partial) throws -> Void,
        linking: ((ChainLink) -> Void)?
    ) throws -> [AuditLogProblem] {
        let (handle, decompressor) = try open(path)
        defer {
            try? handle.close()
            decompressor?.terminate()
            decompressor?.waitUntilExit()
        }
        let reduction = LineReduction(makePartial: makePartial, add: add, extent: extent, makesLinks: linking != nil)
        var problems: [AuditLogProblem] = []
        var linesBefore = 0

        /// Hands a run's chain links to `linking`, numbered in the file.
        func link(_ run: LineReduction<Partial>.Run) {
            guard let linking else { return }
            for var link in run.links {
                link.line += linesBefore
                linking(link)
            }
        }

        /// Hands a decoded batch's partials to `merge` and its bad lines to `problems`.
        func finish(_ batch: LineBatch<Partial>) throws {
            for run in batch.takeRuns() {
                for (line, reason) in run.failures {
                    problems.append(
                        AuditLogProblem(file: path, line: linesBefore + line + 1, reason: reason, isTornLastLine: false)
                    )
                }
                try merge(run.partial)
                link(run)
            }
            linesBefore += batch.lineCount
        }

        // The cores decode the runs of up to `inFlight` reads while this thread reads and cuts the
        // next one into lines and hands finished reads' partials to `merge`, in log order.
        var leftover: [UInt8] = []
        var bytesRead = 0
        func nextBatch() throws -> LineBatch<Partial>? {
            // Read straight into the batch's array, after the line the last read left unfinished.
            let chunkSize = 1 << 20
            var failure: Int32 = 0
            let bytes = unsafe [UInt8](unsafeUninitializedCapacity: leftover.count + chunkSize) { buffer, count in
                _ = unsafe buffer.initialize(fromContentsOf: leftover)
                count = leftover.count
                while count < buffer.count {
                    let got = unsafe readBytes(
                        handle.fileDescriptor, into: UnsafeMutableBufferPointer(rebasing: buffer[count...]))
                    if got > 0 {
                        count += got
                    } else if got == 0 || errno != EINTR {
                        failure = got < 0 ? errno : 0
                        break
                    }
                }
            }
            guard failure == 0 else {
                let reason = unsafe String(cString: strerror(failure))
                throw AuditLogError.cannotOpen(path: path, reason: reason)
            }
            guard bytes.count > leftover.count else { return nil }
            bytesRead += bytes.count - leftover.count
            onBytesRead?(bytesRead)
            let batch = LineBatch(bytes, reduction: reduction)
            leftover = batch.leftover
            return batch
        }
        let workers = WorkerThreads()
        defer { workers.finish() }
        let inFlight = 2 * workers.count
        var decoding: [LineBatch<Partial>] = []
        defer { for batch in decoding { batch.waitForDecoding() } }
        while let batch = try nextBatch() {
            batch.startDecoding(on: workers)
            decoding.append(batch)
            if decoding.count >= inFlight {
                let oldest = decoding.removeFirst()
                oldest.waitForDecoding()
                try finish(oldest)
            }
        }
        while !decoding.isEmpty {
            let oldest = decoding.removeFirst()
            oldest.waitForDecoding()
            try finish(oldest)
        }
        if !leftover.isEmpty {
            let run = reduction.reduce(leftover[...], lines: [0..<leftover.count], isUnterminated: true)
            if let failure = run.failures.first {
                problems.append(
                    AuditLogProblem(file: path, line: linesBefore + 1, reason: failure.reason, isTornLastLine: true))
            } else {
                try merge(run.partial)
            }
            link(run)
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
            throw AuditLogError.cannotOpen(path: path, reason: UnreadableFile.reason(path))
        }
        guard path.hasSuffix(".gz") else {
            guard let handle = FileHandle(forReadingAtPath: path) else {
                throw AuditLogError.cannotOpen(path: path, reason: UnreadableFile.reason(path))
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

    /// Why `JSONDecoder` rejected `data` (a log's line, a summary): where it stops being JSON, or
    /// the field that is missing or of the wrong type.
    static func describe(_ error: any Error, in data: Data) -> String {
        guard let error = error as? DecodingError else { return "\(error)" }
        return switch error {
        case .dataCorrupted(let context):
            JSONSyntaxError(in: data).map { syntax in
                let place = syntax.line == 1 ? "" : "line \(syntax.line), "
                return "not valid JSON at \(place)column \(syntax.column): \(syntax.reason)"
            } ?? "not valid JSON (\(context.debugDescription))"
        case .keyNotFound(let key, _): "missing field '\(key.stringValue)'"
        case .typeMismatch(_, let context), .valueNotFound(_, let context):
            "wrong type at '\(context.codingPath.map(\.stringValue).joined(separator: "."))'"
        @unknown default: "\(error)"
        }
    }
}

/// How a run of lines becomes a partial result: the fast decoder (or `JSONDecoder`) per line, then
/// `add` per record.
private struct LineReduction<Partial: Sendable>: Sendable {
    /// A run's partial result, its lines that are not records (index in the batch, reason), and
    /// its lines' chain links (numbered from 1 in the batch) when asked for.
    struct Run: Sendable {
        var partial: Partial
        var failures: [(line: Int, reason: String)] = []
        var links: [ChainLink] = []
    }

    let makePartial: @Sendable () -> Partial
    let add: @Sendable (inout Partial, AuditRecord) -> Void
    /// How much of each record the fast decoder builds (`JSONDecoder` builds all of it).
    let extent: AuditLogLineDecoder.Extent
    /// Whether runs make their lines' chain links.
    let makesLinks: Bool

    /// Reduces the lines at `lines` (ranges in `bytes`; their numbers in the batch start at
    /// `firstLine`); empty lines are skipped. `isUnterminated` says the lines end without a
    /// newline (a log's last line).
    func reduce(
        _ bytes: ArraySlice<UInt8>, lines: some Collection<Range<Int>>, firstLine: Int = 0,
        isUnterminated: Bool = false
    ) -> Run {
        var run = Run(partial: makePartial())
        var decoder: JSONDecoder?
        for (offset, range) in lines.enumerated() where !range.isEmpty {
            let line = bytes[range]
            // A log event (a rotation's deletion note) is part of the chain, not a record.
            let isRecord =
                !RotatedAway.isNote(line) && reduce(line, into: &run, decoder: &decoder, at: firstLine + offset)
            if makesLinks {
                run.links.append(
                    ChainLink(
                        line, line: firstLine + offset + 1, isUnterminated: isUnterminated, keepsBody: false,
                        isJSON: { isRecord || ChainLink.isJSON(line) }))
            }
        }
        return run
    }

    /// Adds the record on `line` to `run`, or its failure; whether it was a record.
    private func reduce(
        _ line: ArraySlice<UInt8>, into run: inout Run, decoder: inout JSONDecoder?, at index: Int
    ) -> Bool {
        if let record = AuditLogLineDecoder.decode(line, extent: extent) {
            add(&run.partial, record)
            return true
        }
        let slow = decoder ?? AuditLogCoding.decoder()
        decoder = slow
        let data = Data(line)
        do {
            add(&run.partial, try slow.decode(AuditRecord.self, from: data))
            return true
        } catch {
            run.failures.append((index, AuditLogReader.describe(error, in: data)))
            return false
        }
    }
}

/// The complete lines of one read from a log, reduced in the background in runs of lines.
private final class LineBatch<Partial: Sendable>: @unchecked Sendable {
    // @unchecked: `bytes`, `lineRanges`, `leftover` and `reduction` are set in `init` and never
    // change; `runs` is behind a lock; `isDecoding` is touched by the creating thread only.
    private let bytes: [UInt8]
    private let lineRanges: [Range<Int>]
    private let reduction: LineReduction<Partial>
    /// The bytes after the last newline, which the next read completes.
    let leftover: [UInt8]
    private let runs = Locked<[LineReduction<Partial>.Run?]>([])
    private let group = DispatchGroup()
    private var isDecoding = false

    init(_ bytes: [UInt8], reduction: LineReduction<Partial>) {
        var lineRanges: [Range<Int>] = []
        var start = 0
        unsafe bytes.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return }
            while start < buffer.count,
                let found = unsafe memchr(base + start, Int32(UInt8(ascii: "\n")), buffer.count - start)
            {
                let newline = unsafe UnsafeRawPointer(found) - UnsafeRawPointer(base)
                lineRanges.append(start..<newline)
                start = newline + 1
            }
        }
        self.bytes = bytes
        self.lineRanges = lineRanges
        self.reduction = reduction
        self.leftover = Array(bytes[start...])
    }

    /// The complete lines.
    var lineCount: Int { lineRanges.count }

    /// Reduces the lines on `workers` in runs of about 256 lines, each its own job, so the
    /// threads take runs from several batches as they free up.
    func startDecoding(on workers: WorkerThreads) {
        isDecoding = true
        let parts = max(1, lineRanges.count / 256)
        runs.withLock { $0 = Array(repeating: nil, count: parts) }
        for part in 0..<parts {
            group.enter()
            workers.run { [self] in
                defer { group.leave() }
                let lines = (lineRanges.count * part / parts)..<(lineRanges.count * (part + 1) / parts)
                guard let first = lineRanges[lines].first, let last = lineRanges[lines].last else { return }
                // Each part reads its own copy, so the parts never share (and contend for) one
                // array's reference count.
                let own = Array(bytes[first.lowerBound..<last.upperBound])
                let shift = first.lowerBound
                let run = reduction.reduce(
                    own[...], lines: lineRanges[lines].lazy.map { ($0.lowerBound - shift)..<($0.upperBound - shift) },
                    firstLine: lines.lowerBound)
                runs.withLock { $0[part] = run }
            }
        }
    }

    /// Waits until `startDecoding()`'s work is done (at once if it never started or was waited for).
    func waitForDecoding() {
        guard isDecoding else { return }
        group.wait()
        isDecoding = false
    }

    /// The runs' results, in line order; call after `waitForDecoding()`.
    func takeRuns() -> [LineReduction<Partial>.Run] {
        runs.withLock { runs in
            defer { runs = [] }
            return runs.compactMap { $0 }
        }
    }
}

/// `read(2)` into `buffer`: the bytes read, 0 at the end, or -1 with `errno` set.
///
/// With the batch's `memchr` line cutting, the only pointer work of reading a log file (the JSON
/// itself is read by `JSONLineScanner`): the buffer is the unfilled tail of the batch's array.
private func readBytes(_ descriptor: Int32, into buffer: UnsafeMutableBufferPointer<UInt8>) -> Int {
    unsafe read(descriptor, buffer.baseAddress, buffer.count)
}
