import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The file calls the cache makes, on descriptors: the only unsafe code of the module.
///
/// Each call passes buffers it owns for the duration of the call only; descriptors are plain
/// integers whose owner (``StoredBody``, a writer, ``CacheStore``) closes them once.
enum POSIXFile {
    /// Opens `path` for reading; nil when it cannot be opened.
    static func openForReading(_ path: String) -> Int32? {
        let descriptor = unsafe open(path, O_RDONLY | O_CLOEXEC)
        return descriptor >= 0 ? descriptor : nil
    }

    /// Creates `path`, which must not exist, for writing (mode 0600).
    static func create(_ path: String) -> Int32? {
        let descriptor = unsafe open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        return descriptor >= 0 ? descriptor : nil
    }

    /// The size of the open file, in bytes.
    static func size(_ descriptor: Int32) -> Int? {
        var info = stat()
        return unsafe fstat(descriptor, &info) == 0 ? Int(info.st_size) : nil
    }

    /// The size and modification time of `path`.
    static func attributes(_ path: String) -> (size: Int, modified: Date)? {
        var info = stat()
        guard unsafe stat(path, &info) == 0 else { return nil }
        return (Int(info.st_size), Date(timeIntervalSince1970: Double(info.st_mtim.tv_sec)))
    }

    /// Up to `count` bytes from `offset` (fewer at the end of the file or on an error).
    static func read(_ descriptor: Int32, count: Int, at offset: Int) -> [UInt8] {
        guard count > 0 else { return [] }
        return unsafe [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            var done = 0
            if let base = buffer.baseAddress {
                while done < count {
                    let read = unsafe pread(descriptor, base + done, count - done, off_t(offset + done))
                    if read < 0, errno == EINTR { continue }
                    if read <= 0 { break }
                    done += read
                }
            }
            initialized = done
        }
    }

    /// Writes all of `bytes`; false when a write fails.
    static func writeAll(_ bytes: [UInt8], to descriptor: Int32) -> Bool {
        unsafe bytes.withUnsafeBytes { buffer in
            var done = 0
            while done < buffer.count {
                guard let base = buffer.baseAddress else { return false }
                let written = unsafe write(descriptor, base + done, buffer.count - done)
                if written < 0, errno == EINTR { continue }
                if written <= 0 { return false }
                done += written
            }
            return true
        }
    }

    /// Flushes the file to the disk.
    static func sync(_ descriptor: Int32) -> Bool { fsync(descriptor) == 0 }

    /// Sets the modification time of `path` to now.
    static func touch(_ path: String) { _ = unsafe utimes(path, nil) }

    /// Renames `path` to `target`, replacing it, atomically.
    static func rename(_ path: String, to target: String) -> Bool { unsafe Glibc.rename(path, target) == 0 }

    /// Removes `path`.
    static func remove(_ path: String) { _ = unsafe unlink(path) }

    /// Closes the descriptor.
    static func close(_ descriptor: Int32) { _ = Glibc.close(descriptor) }
}
