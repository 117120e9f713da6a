import Foundation

/// What checking an audit log's chain found (see ``AuditLogVerifier``).
public struct AuditLogVerification: Sendable {
    /// One place where the log is not as its writer left it.
    public struct Problem: Sendable, Equatable, CustomStringConvertible {
        /// What was found.
        public enum Kind: String, Sendable, Equatable {
            /// A line's content does not match its digest.
            case edited
            /// Lines are missing: a sequence number is skipped.
            case removed
            /// A line was put in that the writer did not write.
            case inserted
            /// Lines are out of order.
            case reordered
            /// A complete record without its seal, amid sealed lines.
            case unsealed
            /// The anchor digest given is not in the log.
            case anchorMissing
        }

        /// The file, as named.
        public let file: String
        /// The 1-based line, or 0 for the whole log.
        public let line: Int
        /// What was found.
        public let kind: Kind
        /// Details for people.
        public let message: String

        /// `file:line: kind: message`.
        public var description: String { "\(file):\(line): \(kind.rawValue): \(message)" }
    }

    /// The files read, in order.
    public var files: [String] = []
    /// Records read (deletion notes not counted).
    public var records = 0
    /// Sealed lines read (records and notes).
    public var sealedLines = 0
    /// Lines before the first sealed one that carry no seal (written before chaining).
    public var unsealedPrefix = 0
    /// The first sequence number read.
    public var firstSequence: Int?
    /// The last sequence number read.
    public var lastSequence: Int?
    /// The digest of the last line: publish it to anchor the log (see `docs/audit-log.md`).
    public var lastDigest: [UInt8]?
    /// Whether the lines carry HMACs rather than plain SHA-256 digests.
    public var isHMAC = false
    /// Whether digests were checked (false when the log has HMACs and no key was given, or the
    /// caller asked for sequence numbers only).
    public var checkedDigests = true
    /// Deletions the writer noted, oldest first.
    public var rotatedAway: [RotatedAway] = []
    /// Where the log was changed, in log order.
    public var problems: [Problem] = []
    /// Lines a crash left half-written: the last line of the log without its newline, or a line
    /// the chain goes on past. Not tampering.
    public var tornLines: [(file: String, line: Int)] = []

    /// Whether no problem was found.
    public var isIntact: Bool { problems.isEmpty }

    /// Records the writer noted as rotated away (the newest note's running total).
    public var recordsRotatedAway: Int { rotatedAway.map(\.total).max() ?? 0 }

    /// Sequence numbers skipped (lines removed, or a file cut), as problems of kind `removed`.
    public var gaps: [Problem] { problems.filter { $0.kind == .removed } }
}

/// Checks the hash chain of an audit log and its rotated files (see ``LogChain``): finds the first
/// edited, removed, inserted or reordered line by file and line, tells a line a crash tore apart
/// from tampering, and counts what rotation deleted.
///
/// What a chain proves, and what it cannot, is in `docs/audit-log.md` ("Trusting the log").
public enum AuditLogVerifier {
    /// The files of the log at `path` in writing order: `path.N` … `path.1`, then `path`
    /// (those that exist).
    public static func files(forLog path: String) -> [String] {
        var rotated: [String] = []
        var index = 1
        while FileManager.default.fileExists(atPath: "\(path).\(index)") {
            rotated.append("\(path).\(index)")
            index += 1
        }
        let live = FileManager.default.fileExists(atPath: path) ? [path] : []
        return rotated.reversed() + live
    }

    /// Checks `files` (in writing order) as one log.
    ///
    /// - Parameters:
    ///   - files: the log's files, oldest first (``files(forLog:)`` lists them).
    ///   - key: the HMAC key the log was written with, if any.
    ///   - checkDigests: false to check sequence numbers only (fast; `audit report` does this).
    ///   - anchor: a digest published earlier: it must be the digest of some line.
    /// - Throws: ``AuditLogError/cannotOpen(path:reason:)`` when a file cannot be read.
    public static func verify(
        files: [String], key: [UInt8]? = nil, checkDigests: Bool = true, anchor: [UInt8]? = nil
    ) throws(AuditLogError) -> AuditLogVerification {
        var walk = ChainWalk(key: key, checkDigests: checkDigests, anchor: anchor)
        for (index, file) in files.enumerated() {
            walk.begin(file: file)
            let isLastFile = index == files.count - 1
            try forEachLine(inFileAt: file) { line, number, isUnterminated in
                let link = ChainLink(
                    line, line: number, isUnterminated: isUnterminated, keepsBody: walk.checkDigests,
                    isJSON: { ChainLink.isJSON(line) })
                walk.read(link, file: file, isLastFile: isLastFile)
            }
        }
        walk.finish()
        return walk.result
    }
}

extension AuditLogVerifier {
    /// Calls `body` with each non-empty line of the file (no newline), its 1-based number, and
    /// whether it is a last line without a newline; reads a megabyte at a time.
    static func forEachLine(
        inFileAt path: String, _ body: (ArraySlice<UInt8>, Int, Bool) -> Void
    ) throws(AuditLogError) {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw .cannotOpen(path: path, reason: UnreadableFile.reason(path))
        }
        defer { try? handle.close() }
        var pending: [UInt8] = []
        var number = 0
        while true {
            let chunk: Data
            do {
                chunk = try handle.read(upToCount: 1 << 20) ?? Data()
            } catch {
                throw .cannotOpen(path: path, reason: "\(error)")
            }
            if chunk.isEmpty { break }
            pending += chunk
            var start = 0
            while let newline = pending[start...].firstIndex(of: UInt8(ascii: "\n")) {
                number += 1
                if newline > start { body(pending[start..<newline], number, false) }
                start = newline + 1
            }
            pending.removeFirst(start)
        }
        if !pending.isEmpty { body(pending[...], number + 1, true) }
    }
}
