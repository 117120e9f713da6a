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
///
/// A relative path is taken from the folder open at `relativeTo` (the `*at` calls), so that an
/// entry is found by its name in the open `entries/` folder, without walking the folder's path
/// again for each hit; an absolute path ignores it.
enum POSIXFile {
    /// Opens `path` for reading, without changing its access time where the system allows (that
    /// time is the entry's last use, ``markUsed(_:relativeTo:)``); nil when it cannot be opened.
    static func openForReading(_ path: String, relativeTo folder: Int32 = AT_FDCWD) -> Int32? {
        var descriptor = unsafe openat(folder, path, O_RDONLY | O_CLOEXEC | noAccessTime)
        // Refused to a process that does not own the file.
        if descriptor < 0, errno == EPERM { descriptor = unsafe openat(folder, path, O_RDONLY | O_CLOEXEC) }
        return descriptor >= 0 ? descriptor : nil
    }

    /// Opens the folder `path` to find files in it by name (``openForReading(_:relativeTo:)`` and
    /// the others).
    static func openFolder(_ path: String) throws(POSIXError) -> Int32 {
        let descriptor = unsafe open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        return descriptor
    }

    /// Creates `path`, which must not exist, for writing (mode 0600).
    static func create(_ path: String) -> Int32? {
        let descriptor = unsafe open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        return descriptor >= 0 ? descriptor : nil
    }

    /// What the cache reads of a file's status.
    struct Attributes {
        /// Which file it is.
        let identity: Identity
        /// When the entry was last used (``markUsed(_:)``), or read.
        let lastAccess: Date
        var size: Int { identity.size }
    }

    /// A file's inode number, size and modification time (to the nanosecond), which tell it from
    /// a file that replaced it: a new entry renamed into place may reuse a removed one's inode,
    /// but not at the same nanosecond. Marking an entry used changes none of them.
    struct Identity: Equatable {
        let inode: UInt64
        let size: Int
        let modified: Int
    }

    /// The status of the open file.
    static func attributes(_ descriptor: Int32) -> Attributes? {
        var info = stat()
        return unsafe fstat(descriptor, &info) == 0 ? Attributes(info) : nil
    }

    /// The status of `path`.
    static func attributes(_ path: String, relativeTo folder: Int32 = AT_FDCWD) -> Attributes? {
        var info = stat()
        return unsafe fstatat(folder, path, &info, 0) == 0 ? Attributes(info) : nil
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

    /// Sets the access time of `path` to now, its modification time left as it is: the use is
    /// kept on disk, and the file's ``Identity`` stays.
    static func markUsed(_ path: String, relativeTo folder: Int32 = AT_FDCWD) {
        let times = [timespec(tv_sec: 0, tv_nsec: utimeNow), timespec(tv_sec: 0, tv_nsec: utimeOmit)]
        _ = unsafe utimensat(folder, path, times, 0)
    }

    /// Renames `path` to `target` (relative to `targetFolder`), replacing it, atomically.
    static func rename(_ path: String, to target: String, relativeTo targetFolder: Int32 = AT_FDCWD) -> Bool {
        unsafe renameat(AT_FDCWD, path, targetFolder, target) == 0
    }

    /// Removes `path`.
    static func remove(_ path: String, relativeTo folder: Int32 = AT_FDCWD) { _ = unsafe unlinkat(folder, path, 0) }

    /// Closes the descriptor.
    static func close(_ descriptor: Int32) { _ = Glibc.close(descriptor) }

    /// Opens the lock file `path`, creating it (mode 0600) when missing; nil when it cannot be
    /// opened. Its lock (``lock(_:exclusive:wait:)``) is held until the descriptor is closed, or
    /// the process ends however it ends.
    static func openLockFile(_ path: String) -> Int32? {
        var descriptor = unsafe open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        // A folder the process may read but not write (`audit cache ls` of another's cache).
        if descriptor < 0, errno == EACCES || errno == EROFS { descriptor = unsafe open(path, O_RDONLY | O_CLOEXEC) }
        return descriptor >= 0 ? descriptor : nil
    }

    /// Takes the lock of `descriptor` (`flock`), shared or exclusive, waiting for it or not;
    /// whether it was taken. A shared lock taken over an exclusive one replaces it.
    static func lock(_ descriptor: Int32, exclusive: Bool, wait: Bool) -> Bool {
        let operation = (exclusive ? LOCK_EX : LOCK_SH) | (wait ? 0 : LOCK_NB)
        while flock(descriptor, operation) != 0 {
            guard errno == EINTR else { return false }
        }
        return true
    }
}

extension POSIXFile.Attributes {
    fileprivate init(_ info: stat) {
        identity = POSIXFile.Identity(
            inode: UInt64(info.st_ino), size: Int(info.st_size),
            modified: Int(info.st_mtim.tv_sec) * 1_000_000_000 + Int(info.st_mtim.tv_nsec))
        lastAccess = Date(timeIntervalSince1970: Double(info.st_atim.tv_sec) + Double(info.st_atim.tv_nsec) / 1e9)
    }
}

#if canImport(Glibc)
    /// `UTIME_NOW` and `UTIME_OMIT` of `<sys/stat.h>`, and Linux's `O_NOATIME`, which Swift does
    /// not import from Glibc.
    private let utimeNow = (1 << 30) - 1
    private let utimeOmit = (1 << 30) - 2
    private let noAccessTime: Int32 = 0o1_000_000
#else
    private let utimeNow = Int(UTIME_NOW)
    private let utimeOmit = Int(UTIME_OMIT)
    private let noAccessTime: Int32 = 0
#endif
