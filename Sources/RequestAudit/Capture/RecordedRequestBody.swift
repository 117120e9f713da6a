import AuditReport
import Foundation

/// A request body as a recording reads it: in pieces, so that an upload of any size is hashed
/// and measured without being held whole; the recording keeps its bytes only up to its bound.
enum RecordedRequestBody: Sendable {
    /// Bytes in memory: a request's `httpBody`.
    case data(Data)
    /// An upload task's body, as the task keeps it: bytes, or a file read a piece at a time.
    case upload(PlatformInternals.KnownBody)
    /// A body stream read to its end, to be sent again from its spool (which lives as long as this).
    case spooled(SpooledBody)

    /// Calls `take` with each piece of the body, in order; false when its file cannot be read
    /// to its end.
    func forEachPiece(_ take: ([UInt8]) -> Void) -> Bool {
        switch self {
        case .data(let data):
            take([UInt8](data))
            return true
        case .upload(let body):
            return body.forEachPiece(take)
        case .spooled(let body):
            return body.recorded.forEachPiece(take)
        }
    }

    /// The SHA-256 of the whole body, on which a replay matches it; nil when it cannot be read.
    var sha256: [UInt8]? {
        var hash = SHA256()
        return forEachPiece { hash.update($0) } ? hash.finalize() : nil
    }
}

extension RecordedExchange {
    /// Adds `body` to the request, a piece at a time, keeping at most `limit` bytes of it.
    mutating func appendRequestBody(_ body: RecordedRequestBody, keepingAtMost limit: Int) {
        _ = body.forEachPiece { appendRequestBody($0, keepingAtMost: limit) }
    }
}
