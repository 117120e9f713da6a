import AuditLocking
import Dispatch
import Foundation

/// When the audit log is rotated.
public struct LogRotation: Sendable, Hashable {
    /// Rotate before a write would take the file past this many bytes.
    public var maxBytes: Int
    /// How many rotated files to keep (`audit.jsonl.1` is the newest); older ones are deleted, and
    /// each deletion is recorded in the log (see ``AuditLogWriter``). ``keepEverything`` keeps
    /// every file.
    public var keep: Int

    /// Creates a rotation rule.
    public init(maxBytes: Int, keep: Int) {
        self.maxBytes = maxBytes
        self.keep = keep
    }

    /// 10 MiB per file, 5 rotated files.
    public static let `default` = LogRotation(maxBytes: 10 << 20, keep: 5)

    /// A `keep` that never deletes a file.
    public static let keepEverything = Int.max

    /// 10 MiB per file, and no file ever deleted (`audit replay` writes this way).
    public static let keepingEverything = LogRotation(maxBytes: 10 << 20, keep: keepEverything)

    /// Whether rotation never deletes a file.
    public var keepsEverything: Bool { keep == Self.keepEverything }
}

/// Appends ``AuditRecord``s to a JSON Lines file, one per line, and never drops one.
///
/// `append` queues the record for a background writer, which encodes and writes whatever has
/// queued up since it last ran, so the network path neither encodes nor waits for the disk. Lines
/// are kept in memory until written: if a write fails (a full disk), they stay queued and are retried
/// on the next write or flush, and ``lastError`` says why. ``shutdown()`` writes everything, syncs
/// the file to disk and closes it.
///
/// The writer is a `CoalescingWorker`: it wakes up for a record that arrives while it is idle; after
/// each write it looks again every ``batchInterval``, and only goes idle when a look finds nothing
/// new (a record arriving when a look is overdue wakes it). While records keep coming, `append`
/// therefore wakes no thread: a wake-up per record would cost the network path (often the queue
/// every URLSession shares) a thread switch per request.
///
/// What a crash can cost: lines handed to `append` but not yet written (up to about
/// ``batchInterval``'s worth while records flow), and at most one partly written last line, which
/// ``AuditLogReader`` reports and skips.
///
/// Every line is sealed into a hash chain as it is written (see ``LogChain``): a sequence number
/// and a digest linking it to the line before, continued across rotation and restarts. When
/// rotation deletes the oldest file, the writer first notes the deletion in the log itself (a
/// `{"logEvent":"rotatedAway",…}` line with the file's record count, sequence range and last
/// digest), so a report can say how many records were rotated away and a verifier can still
/// check the files that remain.
public final class AuditLogWriter: Sendable {
    /// The log file's path.
    public let path: String
    /// The rotation rule.
    public let rotation: LogRotation
    /// File permissions for new log files.
    public let permissions: Int
    /// How long after a write the writer looks again for records that arrived meanwhile.
    public let batchInterval: Duration

    /// What `append` and the public getters share with the writing queue.
    private struct State: Sendable {
        /// Encoded records not yet written (JSON objects, not yet sealed, with no newline), before
        /// the records queued in the worker.
        var pending: [[UInt8]] = []
        var isClosed = false
        /// The last failed write, until a write succeeds.
        var lastError: AuditLogError?
        /// The last record that could not be encoded: it is lost, so this stays.
        var encodingError: AuditLogError?
        var written = 0
    }

    /// The open file; touched only on `queue`, so that appends never wait for the disk.
    private final class File: @unchecked Sendable {
        // @unchecked: only the serial `queue` reads or writes these.
        var handle: FileHandle?
        var size: Int
        /// The chain the next line continues.
        var chain: LogChain
        /// Records rotation has deleted from this log so far (read back from its notes).
        var rotatedAway = 0

        init(handle: FileHandle, size: Int, chain: LogChain) {
            self.handle = handle
            self.size = size
            self.chain = chain
        }
    }

    private let state = Locked(State())
    private let file: File
    /// Takes appended records and writes them in batches; the file is touched only on its queue.
    private let worker: CoalescingWorker<AuditRecord>

    /// Opens (or creates, with `permissions`) the log at `path` for appending.
    ///
    /// - Parameters:
    ///   - path: the log file; rotated files are `path.1`, `path.2`, ….
    ///   - rotation: when the log rotates and how many rotated files it keeps.
    ///   - permissions: the file mode of a new log file (owner only by default).
    ///   - batchInterval: how long after a write the writer looks again for new records (see the
    ///     type's discussion); it bounds what a crash can lose while records flow.
    ///   - chainKey: a key for an HMAC-SHA-256 chain, which only its holders can extend; nil for a
    ///     plain SHA-256 chain.
    /// - Throws: ``AuditLogError/cannotOpen(path:reason:)``.
    public init(
        path: String, rotation: LogRotation = .default, permissions: Int = 0o600,
        batchInterval: Duration = .milliseconds(5), chainKey: [UInt8]? = nil
    ) throws(AuditLogError) {
        self.path = path
        self.rotation = rotation
        self.permissions = permissions
        self.batchInterval = batchInterval
        let (handle, size) = try Self.open(path, permissions: permissions)
        let file = File(handle: handle, size: size, chain: LogChain.resuming(logAt: path, key: chainKey))
        self.file = file
        if !rotation.keepsEverything { file.rotatedAway = RotatedAway.totalSoFar(logAt: path) }
        // The worker writes through a weak reference: it is the writer's own, and runs past the
        // writer's end only for a look already arranged, which then finds no writer.
        let writes = Locked(WeakWriter())
        worker = CoalescingWorker(label: "RequestAudit.AuditLogWriter", interval: batchInterval) { records in
            writes.withLock { $0.writer }?.writePending(records)
        }
        writes.withLock { $0.writer = self }
    }

    /// The writer, held weakly by its worker's batches.
    private struct WeakWriter {
        weak var writer: AuditLogWriter?
    }

    /// Queues `record` for writing.
    ///
    /// A record that cannot be encoded (it never happens with records RequestAudit makes) is not
    /// written; ``lastError`` then says so.
    ///
    /// - Throws: ``AuditLogError/closed(path:)`` after ``shutdown()``.
    public func append(_ record: AuditRecord) throws(AuditLogError) {
        // Handed to the worker under the lock, so that no record gets in after `shutdown` closed.
        try state.withLock { state throws(AuditLogError) in
            guard !state.isClosed else { throw .closed(path: path) }
            worker.enqueue(record)
        }
    }

    /// How many times `append` woke the writer.
    var wakeUpCount: Int { worker.wakeUpCount }

    /// Whether the writer has no write coming: the next record will wake it.
    var isIdle: Bool { worker.isIdle }

    /// Number of lines written to disk so far (all files).
    public var writtenCount: Int { state.withLock { $0.written } }

    /// The last write error, if writes are failing (lines stay queued meanwhile); otherwise the last
    /// record that could not be encoded, which is never written, so that error stays.
    public var lastError: AuditLogError? { state.withLock { $0.lastError ?? $0.encodingError } }

    /// Waits until every appended line is written and synced to disk.
    public func flush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let file = self.file
            worker.flush {
                try? file.handle?.synchronize()
                continuation.resume()
            }
        }
    }

    /// Stops accepting records, writes and syncs everything queued, and closes the file.
    ///
    /// - Throws: the last write error if some lines could not be written.
    public func shutdown() async throws(AuditLogError) {
        state.withLock { $0.isClosed = true }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let file = self.file
            worker.flush {
                try? file.handle?.synchronize()
                try? file.handle?.close()
                file.handle = nil
                continuation.resume()
            }
        }
        let error: AuditLogError? = state.withLock { state in state.pending.isEmpty ? nil : state.lastError }
        if let error { throw error }
    }

    /// ``shutdown()`` for synchronous code (a command line tool): blocks the calling thread, never a
    /// task of the concurrency pool, until the log is written, synced and closed.
    ///
    /// - Throws: the last write error if some lines could not be written.
    public func shutdownAndWait() throws(AuditLogError) {
        state.withLock { $0.isClosed = true }
        worker.flushAndWait {
            try? file.handle?.synchronize()
            try? file.handle?.close()
            file.handle = nil
        }
        let error: AuditLogError? = state.withLock { state in state.pending.isEmpty ? nil : state.lastError }
        if let error { throw error }
    }

    /// Writes the lines a failed write left and then `records`, rotating first when a line would
    /// overflow the file. Runs on the worker's queue.
    ///
    /// The lines are written outside the lock, as few writes as rotation allows, so `append` never
    /// waits for the disk. Lines that could not be written are kept, in order, for the next write.
    private func writePending(_ records: [AuditRecord]) {
        var lines = state.withLock { state -> [[UInt8]] in
            defer { state.pending.removeAll(keepingCapacity: true) }
            return state.pending
        }
        var encodingFailure: AuditLogError?
        for record in records {
            do {
                lines.append(try record.jsonLineBytes())
            } catch {
                encodingFailure = .writeFailed(path: path, reason: "cannot encode record \(record.id): \(error)")
            }
        }
        if let encodingFailure { state.withLock { $0.encodingError = encodingFailure } }
        guard !lines.isEmpty else { return }
        var written = 0
        var failure: AuditLogError?
        while written < lines.count {
            do {
                let chunk = try writeChunk(lines[written...])
                written += chunk
            } catch {
                failure = error
                break
            }
        }
        state.withLock { state in
            state.written += written
            if written < lines.count {
                state.pending.insert(contentsOf: lines[written...], at: 0)
                state.lastError = failure
            } else {
                state.lastError = nil
            }
        }
    }

    /// Writes the first lines of `lines` that fit before the next rotation (at least one), rotating
    /// first if the first would overflow the file; returns how many were written. Each line is
    /// sealed into the chain as it goes out; on a failed write the chain stays at the last whole
    /// line that reached the file, and the method counts those lines and throws after them.
    private func writeChunk(_ lines: ArraySlice<[UInt8]>) throws(AuditLogError) -> Int {
        do {
            // A sealed line is about 90 bytes longer than the record.
            if file.size > 0, let first = lines.first, file.size + first.count + 90 > rotation.maxBytes {
                try rotate()
            }
        } catch {
            throw .writeFailed(path: path, reason: "\(error)")
        }
        guard let handle = file.handle else { throw .closed(path: path) }
        var bytes: [UInt8] = []
        var ends: [(end: Int, chain: LogChain)] = []
        var chain = file.chain
        for line in lines {
            let start = bytes.count
            chain.seal(line, appendingTo: &bytes)
            bytes.append(UInt8(ascii: "\n"))
            if !ends.isEmpty, file.size + bytes.count > rotation.maxBytes {
                // Over the bound: this line waits for the next file (the chain goes on from the
                // last line written, below).
                bytes.removeSubrange(start...)
                break
            }
            ends.append((bytes.count, chain))
        }
        do {
            try handle.write(contentsOf: bytes)
            file.size += bytes.count
            if let last = ends.last { file.chain = last.chain }
            return ends.count
        } catch {
            // Count what did reach the file; a torn last line stays, as after a crash.
            let reached = ((try? handle.seekToEnd()).map(Int.init) ?? file.size) - file.size
            file.size += reached
            let whole = ends.prefix { $0.end <= reached }
            if let last = whole.last { file.chain = last.chain }
            if !whole.isEmpty { return whole.count }
            throw .writeFailed(path: path, reason: "\(error)")
        }
    }

    /// Moves the live file to `.1` (and each rotated file one number up), deleting the oldest
    /// beyond ``LogRotation/keep`` after noting its deletion at the start of the new live file.
    private func rotate() throws {
        try file.handle?.close()
        file.handle = nil
        let files = FileManager.default
        var highest = 0
        while files.fileExists(atPath: "\(path).\(highest + 1)") { highest += 1 }
        var deleted: [RotatedAway] = []
        if !rotation.keepsEverything, highest >= rotation.keep {
            for index in stride(from: highest, through: max(rotation.keep, 1), by: -1) {
                let doomed = "\(path).\(index)"
                deleted.append(RotatedAway.summarize(fileAt: doomed, shownAs: doomed, totalBefore: 0))
                try files.removeItem(atPath: doomed)
            }
            highest = rotation.keep - 1
        }
        if rotation.keep > 0 {
            for index in stride(from: highest, through: 1, by: -1) {
                try files.moveItem(atPath: "\(path).\(index)", toPath: "\(path).\(index + 1)")
            }
            try files.moveItem(atPath: path, toPath: "\(path).1")
        } else {
            deleted.append(RotatedAway.summarize(fileAt: path, shownAs: path, totalBefore: 0))
            try files.removeItem(atPath: path)
        }
        let (handle, size) = try Self.open(path, permissions: permissions)
        file.handle = handle
        file.size = size
        for deletion in deleted {
            file.rotatedAway += deletion.records
            let note = RotatedAway(
                file: deletion.file, records: deletion.records, total: file.rotatedAway,
                firstSequence: deletion.firstSequence, lastSequence: deletion.lastSequence,
                lastDigest: deletion.lastDigest)
            let line = file.chain.seal(note.jsonObject) + "\n"
            try handle.write(contentsOf: Array(line.utf8))
            file.size += line.utf8.count
        }
    }

    private static func open(_ path: String, permissions: Int) throws(AuditLogError) -> (FileHandle, Int) {
        let files = FileManager.default
        if !files.fileExists(atPath: path) {
            guard files.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: permissions]) else {
                throw .cannotOpen(path: path, reason: "cannot create the file")
            }
        }
        guard let handle = FileHandle(forUpdatingAtPath: path) else {
            throw .cannotOpen(path: path, reason: "cannot open the file for writing")
        }
        do {
            var size = try handle.seekToEnd()
            // A process killed mid-write leaves a torn last line without its newline. End it, so the
            // torn line stays one bad line the reader skips instead of spoiling the next record.
            if size > 0 {
                try handle.seek(toOffset: size - 1)
                let last = try handle.read(upToCount: 1)
                try handle.seekToEnd()
                if last != Data([0x0A]) {
                    try handle.write(contentsOf: Data([0x0A]))
                    size += 1
                }
            }
            return (handle, Int(size))
        } catch {
            throw .cannotOpen(path: path, reason: "\(error)")
        }
    }
}
