import AuditLocking
import AuditReport
import Foundation

/// The cache's folder: one file per stored response under `entries/`, written under `tmp/` and
/// renamed into place once whole, bounded in bytes with least-recently-used eviction.
///
/// An entry file is the body, then the head as JSON, then a trailer: the head's length (4 bytes,
/// big-endian) and the magic `RACACHE1`. A file is served only when its trailer is there and its
/// length adds up, so a store cut short (a crash, a full disk) is never served: it is either
/// still under `tmp/` or not renamed at all.
///
/// Several processes may use one folder (a proxy, `audit cache`, another proxy): each holds a
/// shared lock on its `lock` file while it has the folder open. What is under `tmp/` is removed
/// only by a process that opens the folder alone (an exclusive lock), since another one's files
/// there are entries being written.
final class CacheStore: Sendable {
    let directory: String
    let maximumBytes: Int
    private let state: Locked<Index>
    /// The open `lock` file, whose shared lock says the folder is in use; nil when it could not be
    /// opened.
    private let lockDescriptor: Int32?

    private struct Index {
        var items: [String: Item] = [:]
        var totalBytes = 0
        /// The bytes of the small bodies held in memory.
        var memoryBytes = 0
    }

    private struct Item {
        /// The entry's file: the index forgets an entry whose file is gone or replaced.
        var file: POSIXFile.Identity
        var size: Int { file.size }
        var lastUse: Date
        /// When the use was last marked on the file (``POSIXFile/markUsed(_:)``), at most once a minute.
        var lastMarked: Date
        /// The entry's head, once written or read: a hit decodes no JSON.
        var head: StoredHead? = nil
        /// A small body, held in memory: a hit reads no file.
        var body: [UInt8]? = nil
    }

    /// Bodies up to this size are held in memory beside their heads...
    static let memoryBodyLimit = 64 * 1024
    /// ...up to this many bytes in all.
    static let memoryLimit = 32 << 20

    static let magic = Array("RACACHE1".utf8)
    static let trailerLength = 12

    let entriesPath: String

    /// The file of the entry `key`.
    private func entryPath(_ key: String) -> String { entriesPath + "/" + key }
    var temporaryPath: String { directory + "/tmp" }

    /// Opens (creating it if needed) the cache folder `directory`, bounded at `maximumBytes`.
    init(directory: String, maximumBytes: Int) throws(CacheError) {
        guard maximumBytes >= 1 << 20 else { throw .invalidSize(maximumBytes) }
        self.directory = directory
        self.maximumBytes = maximumBytes
        entriesPath = directory + "/entries"
        let manager = FileManager.default
        var index = Index()
        var lockDescriptor: Int32? = nil
        do {
            for path in [directory, directory + "/entries", directory + "/tmp"] {
                try manager.createDirectory(
                    atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            }
            lockDescriptor = POSIXFile.openLockFile(directory + "/lock")
            if let lockDescriptor, POSIXFile.lock(lockDescriptor, exclusive: true, wait: false) {
                // Alone on the folder: what a crash left half-written is removed (it was never in place).
                for name in try manager.contentsOfDirectory(atPath: directory + "/tmp") {
                    try? manager.removeItem(atPath: directory + "/tmp/" + name)
                }
            }
            if let lockDescriptor { _ = POSIXFile.lock(lockDescriptor, exclusive: false, wait: true) }
            for name in try manager.contentsOfDirectory(atPath: directory + "/entries") where Self.isKey(name) {
                guard let file = POSIXFile.attributes(directory + "/entries/" + name) else { continue }
                index.items[name] = Item(file: file.identity, lastUse: file.lastAccess, lastMarked: file.lastAccess)
                index.totalBytes += file.size
            }
        } catch {
            if let lockDescriptor { POSIXFile.close(lockDescriptor) }
            throw .unusableDirectory(path: directory, reason: (error as NSError).localizedDescription)
        }
        state = Locked(index)
        self.lockDescriptor = lockDescriptor
        evictIfNeeded()
    }

    deinit {
        if let lockDescriptor { POSIXFile.close(lockDescriptor) }
    }

    /// Whether a process (this one or another) has the cache folder `directory` open.
    static func isInUse(directory: String) -> Bool {
        guard let descriptor = POSIXFile.openForReading(directory + "/lock") else { return false }
        defer { POSIXFile.close(descriptor) }
        return !POSIXFile.lock(descriptor, exclusive: true, wait: false)
    }

    /// The file name of `url`'s entry: the SHA-256 of the URL, in hex.
    static func key(for url: String) -> String {
        LogChain.hex(SHA256.hash(Array(url.utf8)))
    }

    private static func isKey(_ name: String) -> Bool {
        name.utf8.count == 64 && name.utf8.allSatisfy { ($0 >= 48 && $0 <= 57) || ($0 >= 97 && $0 <= 102) }
    }

    /// The number of entries and their bytes.
    var usage: (entries: Int, bytes: Int) { state.withLock { ($0.items.count, $0.totalBytes) } }

    /// The stored response of `key`, opened for reading; nil when there is none or its file is not
    /// whole. A read at `now` counts as a use for eviction; a read without (listing) does not.
    ///
    /// The entry's file is looked at even for a body held in memory: another process on the folder
    /// (`audit cache purge`, another proxy) may have removed or replaced it. The index then forgets
    /// what it held, and the file, if any, is read afresh and indexed.
    func read(key: String, now: Date?) -> (head: StoredHead, body: StoredBody)? {
        let known = state.withLock { index -> (StoredHead, [UInt8]?, POSIXFile.Identity, Bool)? in
            // One lookup; the use is noted in place.
            guard let slot = index.items.index(forKey: key) else { return nil }
            var isDue = false
            if let now {
                isDue = now.timeIntervalSince(index.items.values[slot].lastMarked) > 60
                index.items.values[slot].lastUse = now
                if isDue { index.items.values[slot].lastMarked = now }
            }
            let item = index.items.values[slot]
            return item.head.map { ($0, item.body, item.file, isDue) }
        }
        let path = entryPath(key)
        if let (head, body, file, isDue) = known {
            // The use is kept on disk too (the file's access time), at most once a minute, so the
            // order of eviction survives a restart.
            if isDue { POSIXFile.markUsed(path) }
            if let body {
                if POSIXFile.attributes(path)?.identity == file { return (head, StoredBody(bytes: body)) }
            } else if let descriptor = POSIXFile.openForReading(path) {
                if POSIXFile.attributes(descriptor)?.identity == file {
                    return (head, StoredBody(descriptor: descriptor, length: head.bodyLength))
                }
                POSIXFile.close(descriptor)
            }
            forget(key, ifStill: file)
        }
        guard let descriptor = POSIXFile.openForReading(path) else { return nil }
        guard let file = POSIXFile.attributes(descriptor),
            let (head, bodyLength) = Self.readHead(descriptor, size: file.size)
        else {
            POSIXFile.close(descriptor)
            return nil
        }
        let body = StoredBody(descriptor: descriptor, length: bodyLength)
        let small = bodyLength <= Self.memoryBodyLimit ? body.readAll() : nil
        state.withLock { index in
            let old = index.items[key]
            var item = old ?? Item(file: file.identity, lastUse: now ?? Date(), lastMarked: now ?? Date())
            index.totalBytes += file.size - (old?.size ?? 0)
            item.file = file.identity
            item.head = head
            if item.body == nil, let small, small.count == bodyLength,
                index.memoryBytes + small.count <= Self.memoryLimit
            {
                item.body = small
                index.memoryBytes += small.count
            }
            index.items[key] = item
        }
        return (head, body)
    }

    /// The head of the entry file open at `descriptor` (`size` bytes) and its body's length; nil
    /// when the file is not a whole entry.
    static func readHead(_ descriptor: Int32, size: Int) -> (StoredHead, Int)? {
        guard size >= trailerLength else { return nil }
        let trailer = POSIXFile.read(descriptor, count: trailerLength, at: size - trailerLength)
        guard trailer.count == trailerLength, Array(trailer[4...]) == magic else { return nil }
        let headLength = trailer[0..<4].reduce(0) { $0 << 8 | Int($1) }
        let bodyLength = size - trailerLength - headLength
        guard headLength > 0, bodyLength >= 0 else { return nil }
        let json = POSIXFile.read(descriptor, count: headLength, at: bodyLength)
        guard json.count == headLength,
            let head = try? JSONDecoder().decode(StoredHead.self, from: Data(json)), head.bodyLength == bodyLength
        else { return nil }
        return (head, bodyLength)
    }

    /// A new file under `tmp/` to write an entry into; nil when it cannot be made.
    func makeTemporaryFile() -> (path: String, descriptor: Int32)? {
        let path = temporaryPath + "/" + UUID().uuidString
        return POSIXFile.create(path).map { (path, $0) }
    }

    /// Finishes the entry written at `path` (its body already there, `bodyLength` bytes): appends
    /// `head` and the trailer, flushes it to disk and renames it into place as `key`'s entry; then
    /// evicts what exceeds the bound. False (and the file removed) when any step fails.
    func commit(
        path: String, descriptor: Int32, bodyLength: Int, head: StoredHead, key: String, now: Date,
        body: [UInt8]? = nil
    ) -> Bool {
        defer { POSIXFile.close(descriptor) }
        guard let json = try? JSONEncoder().encode(head), json.count < 1 << 31 else {
            POSIXFile.remove(path)
            return false
        }
        let length = json.count
        var tail = [UInt8](json)
        tail += [
            UInt8(length >> 24 & 0xFF), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF),
        ]
        tail += Self.magic
        guard POSIXFile.writeAll(tail, to: descriptor), POSIXFile.sync(descriptor),
            let file = POSIXFile.attributes(descriptor), POSIXFile.rename(path, to: entryPath(key))
        else {
            POSIXFile.remove(path)
            return false
        }
        state.withLock { index in
            let old = index.items[key]
            index.totalBytes += file.size - (old?.size ?? 0)
            index.memoryBytes -= old?.body?.count ?? 0
            var item = Item(file: file.identity, lastUse: now, lastMarked: now, head: head)
            if let body, body.count <= Self.memoryBodyLimit, index.memoryBytes + body.count <= Self.memoryLimit {
                item.body = body
                index.memoryBytes += body.count
            }
            index.items[key] = item
        }
        evictIfNeeded()
        return true
    }

    /// Removes `key`'s entry.
    func remove(key: String) {
        POSIXFile.remove(entryPath(key))
        forget(key)
    }

    /// Drops `key` from the index: its file is removed, or is gone or no longer `file` (an entry
    /// stored meanwhile in its place, another file, is kept).
    private func forget(_ key: String, ifStill file: POSIXFile.Identity? = nil) {
        state.withLock { index in
            guard let item = index.items[key], file == nil || item.file == file else { return }
            index.items[key] = nil
            index.totalBytes -= item.size
            index.memoryBytes -= item.body?.count ?? 0
        }
    }

    /// Every entry's key, most recently used first.
    func keys() -> [String] {
        state.withLock { index in index.items.sorted { $0.value.lastUse > $1.value.lastUse }.map(\.key) }
    }

    /// Removes the least recently used entries until the total is within the bound (down to nine
    /// tenths of it, so that eviction does not run on every store).
    private func evictIfNeeded() {
        let victims = state.withLock { index -> [String] in
            guard index.totalBytes > maximumBytes else { return [] }
            var victims: [String] = []
            for (key, item) in index.items.sorted(by: { $0.value.lastUse < $1.value.lastUse }) {
                guard index.totalBytes > maximumBytes / 10 * 9 else { break }
                index.items[key] = nil
                index.totalBytes -= item.size
                index.memoryBytes -= item.body?.count ?? 0
                victims.append(key)
            }
            return victims
        }
        for key in victims { POSIXFile.remove(entryPath(key)) }
    }
}
