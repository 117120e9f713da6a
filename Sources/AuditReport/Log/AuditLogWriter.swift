import AuditLocking
import Dispatch
import Foundation

/// When the audit log is rotated.
public struct LogRotation: Sendable, Hashable {
    /// Rotate before a write would take the file past this many bytes.
    public var maxBytes: Int
    /// How many rotated files to keep (`audit.jsonl.1` is the newest); older ones are deleted.
    public var keep: Int

    /// Creates a rotation rule.
    public init(maxBytes: Int, keep: Int) {
        self.maxBytes = maxBytes
        self.keep = keep
    }

    /// 10 MiB per file, 5 rotated files.
    public static let `default` = LogRotation(maxBytes: 10 << 20, keep: 5)
}

/// Appends ``AuditRecord``s to a JSON Lines file, one per line, and never drops one.
///
/// `append` encodes the record on the caller's thread and hands the line to a background writer,
/// so the network path never waits for the disk. Lines are kept in memory until written: if a write
/// fails (a full disk), they stay queued and are retried on the next write or flush, and
/// ``lastError`` says why. ``shutdown()`` writes everything, syncs the file to disk and closes it.
///
/// What a crash can cost: lines handed to `append` but not yet written (normally microseconds'
/// worth), and at most one partly written last line, which ``AuditLogReader`` reports and skips.
public final class AuditLogWriter: Sendable {
    /// The log file's path.
    public let path: String
    /// The rotation rule.
    public let rotation: LogRotation
    /// File permissions for new log files.
    public let permissions: Int

    private struct State: @unchecked Sendable {
        // FileHandle is only touched on `queue`, inside the lock.
        var handle: FileHandle?
        var size = 0
        var pending: [String] = []
        var isClosed = false
        var lastError: AuditLogError?
        var written = 0
    }

    private let state: Locked<State>
    private let queue = DispatchQueue(label: "RequestAudit.AuditLogWriter")

    /// Opens (or creates, with `permissions`) the log at `path` for appending.
    ///
    /// - Throws: ``AuditLogError/cannotOpen(path:reason:)``.
    public init(path: String, rotation: LogRotation = .default, permissions: Int = 0o600) throws(AuditLogError) {
        self.path = path
        self.rotation = rotation
        self.permissions = permissions
        let (handle, size) = try Self.open(path, permissions: permissions)
        state = Locked(State(handle: handle, size: size))
    }

    /// Queues `record` for writing.
    ///
    /// - Throws: ``AuditLogError/closed(path:)`` after ``shutdown()``.
    public func append(_ record: AuditRecord) throws(AuditLogError) {
        let line: String
        do {
            line = try record.jsonLine() + "\n"
        } catch {
            throw .writeFailed(path: path, reason: "cannot encode the record: \(error)")
        }
        try state.withLock { state throws(AuditLogError) in
            guard !state.isClosed else { throw .closed(path: path) }
            state.pending.append(line)
        }
        queue.async { self.writePending() }
    }

    /// Number of lines written to disk so far (all files).
    public var writtenCount: Int { state.withLock { $0.written } }

    /// The last write error, if writes are failing; lines stay queued meanwhile.
    public var lastError: AuditLogError? { state.withLock { $0.lastError } }

    /// Waits until every appended line is written and synced to disk.
    public func flush() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            queue.async {
                self.writePending()
                self.state.withLock { state in
                    try? state.handle?.synchronize()
                }
                continuation.resume()
            }
        }
    }

    /// Stops accepting records, writes and syncs everything queued, and closes the file.
    ///
    /// - Throws: the last write error if some lines could not be written.
    public func shutdown() async throws(AuditLogError) {
        state.withLock { $0.isClosed = true }
        await flush()
        let error: AuditLogError? = state.withLock { state in
            try? state.handle?.close()
            state.handle = nil
            return state.pending.isEmpty ? nil : state.lastError
        }
        if let error { throw error }
    }

    /// Writes every queued line, rotating first when a line would overflow the file. Runs on `queue`.
    private func writePending() {
        state.withLock { state in
            while let line = state.pending.first {
                let bytes = Data(line.utf8)
                do {
                    if state.size > 0, state.size + bytes.count > rotation.maxBytes {
                        try rotate(&state)
                    }
                    guard let handle = state.handle else { return }
                    try handle.write(contentsOf: bytes)
                    state.size += bytes.count
                    state.written += 1
                    state.pending.removeFirst()
                    state.lastError = nil
                } catch {
                    state.lastError = .writeFailed(path: path, reason: "\(error)")
                    return
                }
            }
        }
    }

    private func rotate(_ state: inout State) throws {
        try state.handle?.close()
        state.handle = nil
        let files = FileManager.default
        let oldest = "\(path).\(rotation.keep)"
        if files.fileExists(atPath: oldest) { try files.removeItem(atPath: oldest) }
        if rotation.keep > 0 {
            for index in stride(from: rotation.keep - 1, through: 1, by: -1)
            where files.fileExists(atPath: "\(path).\(index)") {
                try files.moveItem(atPath: "\(path).\(index)", toPath: "\(path).\(index + 1)")
            }
            try files.moveItem(atPath: path, toPath: "\(path).1")
        } else {
            try files.removeItem(atPath: path)
        }
        let (handle, size) = try Self.open(path, permissions: permissions)
        state.handle = handle
        state.size = size
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
