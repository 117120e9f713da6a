import AuditReport

/// A recording keeps bodies as the client's application reads them: HAR's texts are decoded bodies,
/// and only a decoded body can be redacted. These undo a recorded exchange's content codings, or
/// name the coding a body is kept with when it cannot be undone.
extension RecordedExchange {
    /// Undoes the content coding of the request body (`Content-Encoding`: `gzip`, `deflate`, `br`,
    /// `zstd`), as a replay undoes a live request's (``ReplayBodyDigest``). A body whose coding is
    /// unknown, whose bytes do not decode, or that decodes to more than `maximumBytes` is kept as
    /// sent, its coding named (``requestContentCoding``).
    package mutating func undoRequestBodyCoding(keepingAtMost maximumBytes: Int) {
        guard let body = requestBody else { return }
        if let decoded = Self.decodedRequestBody(body, headers: requestHeaders, maximumBytes: maximumBytes) {
            decodeRequestBody(decoded)
        } else {
            requestContentCoding = Self.contentCodings(in: requestHeaders).joined(separator: ", ")
        }
    }

    /// `body`, sent with `headers`, with its content coding undone (as it is when they name none),
    /// or nil when the coding is unknown, the bytes do not decode, or they decode to more than
    /// `maximumBytes`: the one rule by which a recording keeps a request body and a replay reads a
    /// live one.
    package static func decodedRequestBody(_ body: [UInt8], headers: [RequestSnapshot.Header], maximumBytes: Int)
        -> [UInt8]?
    {
        let codings = contentCodings(in: headers)
        guard !codings.isEmpty, !body.isEmpty else { return body }
        return try? ContentDecoder.decode(body, codings: codings, maximumBytes: maximumBytes)
    }

    /// Undoes the content coding of the response body piece by piece, each piece keeping its time
    /// (one that decodes to nothing yet is left out), and notes the size that came. A body whose
    /// coding is unknown, whose bytes do not decode, or that decodes to more than `maximumBytes` is
    /// kept as it came, its coding named (``contentCoding``).
    package mutating func undoResponseBodyCoding(keepingAtMost maximumBytes: Int) {
        let codings = Self.contentCodings(in: responseHeaders)
        guard !codings.isEmpty, !chunks.isEmpty else { return }
        do {
            let decoder = try ContentDecoder(codings: codings, maximumBytes: maximumBytes)
            let decoded = try chunks.compactMap { chunk throws(ContentDecoder.Failure) in
                let bytes = try decoder.decode(chunk.bytes)
                return bytes.isEmpty ? nil : Chunk(milliseconds: chunk.milliseconds, bytes: bytes)
            }
            try decoder.finish()
            transferredBodyBytes = chunks.reduce(0) { $0 + $1.bytes.count }
            chunks = decoded
        } catch {
            contentCoding = codings.joined(separator: ", ")
        }
    }
}
