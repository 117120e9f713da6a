import AuditLocking
import AuditReport
import Foundation

/// The cache's folder: one file per stored response under `entries/`, written under `tmp/` and
/// renamed into place once whole, bounded in bytes with least-recently-used eviction.
///
/// A URL's entry is named by the URL's digest (``key(for:)``); the other variants of a response
/// that varies (`Vary`) are named by that key and the digest of the variant's header values
/// (``variantKey(of:varied:)``).
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
    /// The largest body an entry may have: an eighth of the bound, so that one response does not
    /// evict most of the others, but at least 1 MiB (or the whole bound, when it is smaller).
    var entryLimit: Int { max(maximumBytes / 8, min(maximumBytes, 1 << 20)) }
    private let state: Locked<Index>
    /// The open `lock` file, whose shared lock says the folder is in use; nil when it could not be
    /// opened.
    private let lockDescriptor: Int32?
    /// The open `entries/` folder, in which an entry's file is found by its key.
    private let entries: Int32

    private struct Index {
        var items: [String: Item] = [:]
        /// The variant entries kept beside each URL's entry, by the URL's key.
        var variants: [String: Set<String>] = [:]
        var totalBytes = 0
        /// The bytes of the small bodies held in memory.
        var memoryBytes = 0

        /// Puts `item` in as `key`'s, in place of the one there.
        mutating func set(_ item: Item, for key: String) {
            if let old = items.updateValue(item, forKey: key) {
                totalBytes -= old.size
                memoryBytes -= old.body?.count ?? 0
            } else if let urlKey = CacheStore.urlKey(ofVariant: key) {
                variants[urlKey, default: []].insert(key)
            }
            totalBytes += item.size
            memoryBytes += item.body?.count ?? 0
        }

        /// Takes `key`'s item out.
        mutating func remove(_ key: String) {
            guard let item = items.removeValue(forKey: key) else { return }
            totalBytes -= item.size
            memoryBytes -= item.body?.count ?? 0
            if let urlKey = CacheStore.urlKey(ofVariant: key) {
                variants[urlKey]?.remove(key)
                if variants[urlKey]?.isEmpty == true { variants[urlKey] = nil }
            }
        }
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

    var temporaryPath: String { directory + "/tmp" }

    /// Opens (creating it if needed) the cache folder `directory`, bounded at `maximumBytes`.
    init(directory: String, maximumBytes: Int) throws(CacheError) {
        guard maximumBytes > 0 else { throw .invalidSize(maximumBytes) }
        self.directory = directory
        self.maximumBytes = maximumBytes
        let manager = FileManager.default
        var index = Index()
        var lockDescriptor: Int32? = nil
        var entries: Int32 = -1
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
            entries = try POSIXFile.openFolder(directory + "/entries")
            for name in try manager.contentsOfDirectory(atPath: directory + "/entries") where Self.isKey(name) {
                guard let file = POSIXFile.attributes(name, relativeTo: entries) else { continue }
                index.set(Item(file: file.identity, lastUse: file.lastAccess, lastMarked: file.lastAccess), for: name)
            }
        } catch {
            if let lockDescriptor { POSIXFile.close(lockDescriptor) }
            if entries >= 0 { POSIXFile.close(entries) }
            throw .unusableDirectory(path: directory, reason: (error as NSError).localizedDescription)
        }
        state = Locked(index)
        self.lockDescriptor = lockDescriptor
        self.entries = entries
        evictIfNeeded()
    }

    deinit {
        if let lockDescriptor { POSIXFile.close(lockDescriptor) }
        POSIXFile.close(entries)
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

    /// The file name of a variant of the response to the URL whose key is `urlKey`: that key, `-`,
    /// and 16 hex digits of the SHA-256 of the variant's values of the headers its `Vary` names.
    static func variantKey(of urlKey: String, varied: [String: String?]) -> String {
        var text = ""
        for (name, value) in varied.sorted(by: { $0.key < $1.key }) {
            text += name + (value.map { ":" + $0 } ?? "") + "\n"
        }
        return urlKey + "-" + LogChain.hex(SHA256.hash(Array(text.utf8))).prefix(16)
    }

    /// The URL's key of a variant's key; nil for a URL's own key.
    static func urlKey(ofVariant key: String) -> String? {
        key.utf8.count == 81 ? String(key.prefix(64)) : nil
    }

    private static func isKey(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        let isHex = { (byte: UInt8) in (byte >= 48 && byte <= 57) || (byte >= 97 && byte <= 102) }
        switch bytes.count {
        case 64: return bytes.allSatisfy(isHex)
        case 81:
            return bytes[64] == UInt8(ascii: "-") && bytes[..<64].allSatisfy(isHex) && bytes[65...].allSatisfy(isHex)
        default: return false
        }
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
        if let (head, body, file, isDue) = known {
            // The use is kept on disk too (the file's access time), at most once a minute, so the
            // order of eviction survives a restart.
            if isDue { POSIXFile.markUsed(key, relativeTo: entries) }
            if let body {
                if POSIXFile.attributes(key, relativeTo: entries)?.identity == file {
                    return (head, StoredBody(bytes: body))
                }
            } else if let descriptor = POSIXFile.openForReading(key, relativeTo: entries) {
                if POSIXFile.attributes(descriptor)?.identity == file {
                    return (head, StoredBody(descriptor: descriptor, length: head.bodyLength))
                }
                POSIXFile.close(descriptor)
            }
            forget(key, ifStill: file)
        }
        guard let descriptor = POSIXFile.openForReading(key, relativeTo: entries) else { return nil }
        guard let file = POSIXFile.attributes(descriptor),
            let (head, bodyLength) = Self.readHead(descriptor, size: file.size)
        else {
            POSIXFile.close(descriptor)
            return nil
        }
        let body = StoredBody(descriptor: descriptor, length: bodyLength)
        let small = bodyLength <= Self.memoryBodyLimit ? body.readAll() : nil
        state.withLock { index in
            var item = index.items[key] ?? Item(file: file.identity, lastUse: now ?? Date(), lastMarked: now ?? Date())
            item.file = file.identity
            item.head = head
            if item.body == nil, let small, small.count == bodyLength,
                index.memoryBytes + small.count <= Self.memoryLimit
            {
                item.body = small
            }
            index.set(item, for: key)
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
            let file = POSIXFile.attributes(descriptor), POSIXFile.rename(path, to: key, relativeTo: entries)
        else {
            POSIXFile.remove(path)
            return false
        }
        state.withLock { index in
            var item = Item(file: file.identity, lastUse: now, lastMarked: now, head: head)
            let held = index.memoryBytes - (index.items[key]?.body?.count ?? 0)
            if let body, body.count <= Self.memoryBodyLimit, held + body.count <= Self.memoryLimit {
                item.body = body
            }
            index.set(item, for: key)
        }
        evictIfNeeded()
        return true
    }

    /// Removes `key`'s entry.
    func remove(key: String) {
        POSIXFile.remove(key, relativeTo: entries)
        forget(key)
    }

    /// Removes the variant entries kept beside the entry of the URL whose key is `urlKey`.
    func removeVariants(of urlKey: String) {
        let keys = state.withLock { $0.variants[urlKey] ?? [] }
        for key in keys { remove(key: key) }
    }

    /// Drops `key` from the index: its file is removed, or is gone or no longer `file` (an entry
    /// stored meanwhile in its place, another file, is kept).
    private func forget(_ key: String, ifStill file: POSIXFile.Identity? = nil) {
        state.withLock { index in
            guard let item = index.items[key], file == nil || item.file == file else { return }
            index.remove(key)
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
            for key in index.items.sorted(by: { $0.value.lastUse < $1.value.lastUse }).map(\.key) {
                guard index.totalBytes > maximumBytes / 10 * 9 else { break }
                index.remove(key)
                victims.append(key)
            }
            return victims
        }
        for key in victims { POSIXFile.remove(key, relativeTo: entries) }
    }
}
