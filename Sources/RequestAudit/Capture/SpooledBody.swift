import Foundation

/// A request's body stream, read once so that a recording can hash it, and sent again from here:
/// its bytes in memory while they are at most ``inMemoryBytes``, else in a temporary file (mode
/// 0600: a body may hold secrets) removed when the last reference to this goes. So a large streamed
/// upload is never held whole.
final class SpooledBody: Sendable {
    /// The most bytes kept in memory.
    static let inMemoryBytes = 1 << 20

    /// Where the bytes are.
    enum Storage {
        case memory(Data)
        /// A temporary file of this spool's own.
        case file(URL)
    }

    let storage: Storage

    /// Reads `stream` to its end (or to a read error, as Foundation would send it). Should the
    /// temporary file fail, the bytes stay in memory.
    init(reading stream: InputStream) {
        stream.open()
        defer { stream.close() }
        var memory = Data()
        var spool: (url: URL, handle: FileHandle)?
        var buffer = [UInt8](repeating: 0, count: 64 * 1_024)
        while true {
            let count = unsafe stream.read(&buffer, maxLength: buffer.count)
            guard count > 0 else { break }
            if spool == nil, memory.count + count > Self.inMemoryBytes {
                spool = Self.spool(memory)
                if spool != nil { memory = Data() }
            }
            if let file = spool {
                do {
                    try file.handle.write(contentsOf: buffer[..<count])
                    continue
                } catch {
                    // The disk is full: on in memory, with what the file holds.
                    try? file.handle.close()
                    memory = (try? Data(contentsOf: file.url)) ?? Data()
                    try? FileManager.default.removeItem(at: file.url)
                    spool = nil
                }
            }
            memory.append(contentsOf: buffer[..<count])
        }
        try? spool?.handle.close()
        storage = spool.map { .file($0.url) } ?? .memory(memory)
    }

    deinit {
        if case .file(let file) = storage { try? FileManager.default.removeItem(at: file) }
    }

    /// A temporary file that holds `bytes`, open for more; nil when it cannot be made.
    private static func spool(_ bytes: Data) -> (url: URL, handle: FileHandle)? {
        let url = URL(fileURLWithPath: NSTemporaryDirectory() + "request-audit-body-\(UUID().uuidString)")
        guard FileManager.default.createFile(atPath: url.path, contents: bytes, attributes: [.posixPermissions: 0o600]),
            let handle = try? FileHandle(forWritingTo: url), (try? handle.seekToEnd()) != nil
        else {
            try? FileManager.default.removeItem(at: url)
            return nil
        }
        return (url, handle)
    }

    /// A new stream of the bytes, to send them.
    func makeStream() -> InputStream {
        switch storage {
        case .memory(let bytes): InputStream(data: bytes)
        // InputStream(url:) is nil only for a URL it cannot stream from: then an empty body.
        case .file(let file): InputStream(url: file) ?? InputStream(data: Data())
        }
    }
}
