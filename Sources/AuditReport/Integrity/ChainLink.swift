import Foundation

/// What checking the chain needs of one non-empty line of a log: read on any thread, walked in
/// log order by ``ChainWalk``.
struct ChainLink: Sendable {
    /// What the line is.
    enum Kind: Sendable {
        /// A line ending with its sequence number and digest.
        case sealed(SealedLine)
        /// A line without them: a record written before chaining or without its seal (when it is
        /// JSON), or a line a crash tore (when it is not).
        case unsealed(isJSON: Bool)
    }

    /// The 1-based line number in its file.
    var line: Int
    /// What the line is.
    let kind: Kind
    /// The deletion note the line holds, if it is one.
    let note: RotatedAway?
    /// Whether the line is a deletion note rather than a record.
    let isNote: Bool
    /// Whether the line is the last of its file and has no newline.
    let isUnterminated: Bool

    /// The link of `bytes`, line `line` of its file; `isJSON` is asked only of unsealed lines.
    ///
    /// - Parameter keepsBody: false when digests will not be checked, so that the line's body is
    ///   not copied (see ``SealedLine/body``).
    init(
        _ bytes: ArraySlice<UInt8>, line: Int, isUnterminated: Bool = false, keepsBody: Bool,
        isJSON: () -> Bool
    ) {
        self.line = line
        self.isUnterminated = isUnterminated
        isNote = RotatedAway.isNote(bytes)
        note = isNote ? RotatedAway(line: bytes) : nil
        if let sealed = SealedLine(bytes, keepingBody: keepsBody) {
            kind = .sealed(sealed)
        } else {
            kind = .unsealed(isJSON: isJSON())
        }
    }

    /// Whether `bytes` is JSON: the record decoder first, Foundation's parser for the rest.
    static func isJSON(_ bytes: ArraySlice<UInt8>) -> Bool {
        AuditLogLineDecoder.decode(bytes) != nil || (try? JSONSerialization.jsonObject(with: Data(bytes))) != nil
    }
}
