import AuditReport
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A request body as a recording reads it: in pieces, so that an upload of any size is hashed
/// and measured without being held whole; the recording keeps its bytes only up to its bound.
///
/// Unsafe code: an upload task's bytes (DispatchData) are copied out a piece at a time from the
/// buffers of its regions, which live for the call that hands them over.
@safe
enum RecordedRequestBody: Sendable {
    /// Bytes in memory: a request's `httpBody`.
    case data(Data)
    /// An upload task's body, as the task keeps it: bytes, or a file.
    case upload(PlatformInternals.KnownBody)
    /// A body stream read to its end, to be sent again from its spool (which lives as long as this).
    case spooled(SpooledBody)

    /// The size of a piece ``forEachPiece(_:)`` hands over from bytes not already in one piece.
    static let pieceSize = 64 * 1_024

    /// Calls `take` with each piece of the body, in order; false when its file cannot be read to
    /// its end.
    func forEachPiece(_ take: ([UInt8]) -> Void) -> Bool {
        switch self {
        case .data(let data):
            take([UInt8](data))
            return true
        case .upload(.data(let data)):
            for region in data.regions {
                unsafe region.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
                    for start in stride(from: 0, to: buffer.count, by: Self.pieceSize) {
                        let end = min(buffer.count, start + Self.pieceSize)
                        take(unsafe [UInt8](UnsafeRawBufferPointer(rebasing: buffer[start..<end])))
                    }
                }
            }
            return true
        case .upload(.file(let file)):
            return Self.forEachPiece(of: file, take)
        case .spooled(let body):
            switch body.storage {
            case .memory(let bytes):
                take([UInt8](bytes))
                return true
            case .file(let file):
                return Self.forEachPiece(of: file, take)
            }
        }
    }

    /// Calls `take` with each piece of `file` (at most ``pieceSize`` bytes); false when it cannot
    /// be read to its end.
    private static func forEachPiece(of file: URL, _ take: ([UInt8]) -> Void) -> Bool {
        guard let handle = try? FileHandle(forReadingFrom: file) else { return false }
        defer { try? handle.close() }
        do {
            while let piece = try handle.read(upToCount: pieceSize), !piece.isEmpty {
                take([UInt8](piece))
            }
            return true
        } catch {
            return false
        }
    }

    /// The SHA-256 of the whole body, on which a replay matches it; nil when it cannot be read.
    var sha256: [UInt8]? {
        var hash = SHA256()
        return forEachPiece { hash.update($0) } ? hash.finalize() : nil
    }
}

extension URLRequest {
    /// The request's `httpBody`, as a recording reads it.
    var recordedBody: RecordedRequestBody? { httpBody.map(RecordedRequestBody.data) }
}

extension RecordedExchange {
    /// Adds `body` to the request, a piece at a time, keeping at most `limit` bytes of it.
    mutating func appendRequestBody(_ body: RecordedRequestBody, keepingAtMost limit: Int) {
        _ = body.forEachPiece { appendRequestBody($0, keepingAtMost: limit) }
    }
}
