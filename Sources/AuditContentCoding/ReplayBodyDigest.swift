import AuditReport

/// A request body read to be matched against a recording (``HARReplay``): hashed as it comes, and
/// held while it is no larger than the largest body the recording matches on its redacted form, to
/// be decoded at its end (its `Content-Encoding` undone, as a recording keeps a body) and redacted.
package struct ReplayBodyDigest {
    private var sent = SHA256()
    private var held: [UInt8]? = []
    private let holdingAtMost: Int
    /// The bytes read so far.
    package private(set) var byteCount = 0

    /// A digest that holds at most `limit` bytes of the body (``HARReplay/MatchingBodies/largestRedacted``).
    package init(holdingAtMost limit: Int) {
        holdingAtMost = limit
    }

    /// Reads the next piece of the body.
    package mutating func update(_ bytes: some Collection<UInt8>) {
        sent.update(bytes)
        byteCount += bytes.count
        if byteCount > holdingAtMost { held = nil } else { held?.append(contentsOf: bytes) }
    }

    /// The digests of the body read, sent with `headers`, as `replay` matches them: the redacted
    /// digest only when the body was held. A body that does not decode as its `Content-Encoding`
    /// says (or decodes to more than a recording keeps by default) is redacted as sent, as a
    /// recording keeps it.
    package func finalize(headers: [RequestSnapshot.Header], for replay: HARReplay) -> HARReplay.BodyDigests {
        let redacted = held.map { body in
            let decoded = RecordedExchange.decodedRequestBody(
                body, headers: headers, maximumBytes: HARRecorder.defaultMaximumBodyBytes)
            return replay.redactedDigest(of: decoded ?? body, type: headers.value(named: "content-type"))
        }
        return HARReplay.BodyDigests(redacted: redacted, sent: sent.finalize())
    }
}
