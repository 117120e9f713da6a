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
        var walk = ChainWalk(key: key, checkDigests: checkDigests)
        // Deletion notes first: they anchor the files that remain.
        for file in files {
            try forEachLine(inFileAt: file) { line, _, _ in
                if RotatedAway.isNote(line), let note = RotatedAway(line: line) { walk.notes.append(note) }
            }
        }
        for (index, file) in files.enumerated() {
            walk.result.files.append(file)
            let isLastFile = index == files.count - 1
            try forEachLine(inFileAt: file) { line, number, isUnterminated in
                walk.read(line, file: file, line: number, isTornEnd: isLastFile && isUnterminated)
            }
        }
        walk.finish()
        if let anchor, !walk.digests.contains(anchor) {
            walk.result.problems.append(
                .init(
                    file: files.last ?? "-", line: 0, kind: .anchorMissing,
                    message: "no line has the anchor digest \(anchor.hexString): the lines up to it were changed, "
                        + "or the log was cut before it"))
        }
        walk.result.rotatedAway = walk.notes
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
            throw .cannotOpen(path: path, reason: "cannot read the file")
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

/// The state of a walk along the chain: the last two sealed lines, and what is still undecided.
private struct ChainWalk {
    struct Entry {
        let file: String
        let line: Int
        let sequence: Int
        let digest: [UInt8]
        let body: ArraySlice<UInt8>
    }

    let key: [UInt8]?
    var checkDigests: Bool
    var result = AuditLogVerification()
    var notes: [RotatedAway] = []
    var digests: Set<[UInt8]> = []
    private var previous: Entry?
    private var beforePrevious: Entry?
    /// A line whose sequence number jumped: removed lines, or the first of two swapped ones.
    private var jump: (entry: Entry, expected: Int)?
    /// Unsealed lines since the last sealed one.
    private var unsealed: [(file: String, line: Int, isRecord: Bool)] = []

    init(key: [UInt8]?, checkDigests: Bool) {
        self.key = key
        self.checkDigests = checkDigests
        result.checkedDigests = checkDigests
    }

    mutating func read(_ line: ArraySlice<UInt8>, file: String, line number: Int, isTornEnd: Bool) {
        guard let sealed = SealedLine(line) else {
            if isTornEnd {
                result.tornLines.append((file, number))
            } else {
                let isRecord = (try? JSONSerialization.jsonObject(with: Data(line))) != nil
                unsealed.append((file, number, isRecord))
            }
            return
        }
        if !RotatedAway.isNote(line) { result.records += 1 }
        result.sealedLines += 1
        if result.sealedLines == 1 {
            result.isHMAC = sealed.isHMAC
            if sealed.isHMAC, key == nil { checkDigests = false }
            result.checkedDigests = checkDigests
        }
        if key != nil, !sealed.isHMAC {
            problem(file, number, .edited, "the line carries a plain SHA-256 digest, but the log is HMAC-sealed")
        }
        let entry = Entry(file: file, line: number, sequence: sealed.sequence, digest: sealed.digest, body: sealed.body)
        digests.insert(sealed.digest)
        result.firstSequence = result.firstSequence ?? sealed.sequence
        result.lastSequence = sealed.sequence
        result.lastDigest = sealed.digest
        step(entry)
    }

    /// Whether `entry` chains from `digest`.
    private func chains(_ entry: Entry, from digest: [UInt8]) -> Bool {
        !checkDigests || LogChain.digest(previous: digest, body: entry.body, key: key) == entry.digest
    }

    private mutating func step(_ entry: Entry) {
        defer { settleUnsealed() }
        if let (first, expected) = jump {
            jump = nil
            if entry.sequence == expected {
                problem(
                    first.file, first.line, .reordered,
                    "seq \(first.sequence) comes before seq \(entry.sequence): lines were swapped or moved")
                advance(to: entry)
                return
            }
            problem(
                first.file, first.line, .removed,
                "seq \(expected)…\(first.sequence - 1) missing before this line"
                    + (first.line == 1 ? " (the previous file was cut, or lines removed)" : " (lines removed)"))
        }
        guard let previous else {
            start(entry)
            return
        }
        let expected = previous.sequence + 1
        if entry.sequence == expected {
            if !chains(entry, from: previous.digest) {
                problem(
                    entry.file, entry.line, .edited,
                    "seq \(entry.sequence) does not match its \(key == nil ? "digest" : "HMAC")"
                        + (key == nil ? "" : " (edited, or forged without the key)"))
            }
        } else if entry.sequence > expected {
            jump = (entry, expected)
        } else if entry.sequence == previous.sequence, let beforePrevious, chains(entry, from: beforePrevious.digest) {
            problem(
                previous.file, previous.line, .inserted,
                "seq \(previous.sequence) appears twice and the chain goes on from the other one: this line was "
                    + "put in")
            self.previous = beforePrevious
        } else {
            problem(
                entry.file, entry.line, .inserted,
                "seq \(entry.sequence) after seq \(previous.sequence): a line written again or put in")
            return  // keep the chain at the previous line
        }
        advance(to: entry)
    }

    private mutating func start(_ entry: Entry) {
        if entry.sequence == 1 {
            if !chains(entry, from: LogChain.genesis) {
                problem(entry.file, entry.line, .edited, "seq 1 does not match its digest")
            }
        } else if let note = notes.first(where: { $0.lastSequence == entry.sequence - 1 }), let digest = note.lastDigest
        {
            if !chains(entry, from: digest) {
                problem(
                    entry.file, entry.line, .edited,
                    "seq \(entry.sequence) does not chain from the last line of \(note.file), which rotation deleted")
            }
        } else {
            problem(
                entry.file, entry.line, .removed,
                "seq 1…\(entry.sequence - 1) missing before the first line, and no rotation noted deleting them")
        }
        result.unsealedPrefix = unsealed.count
        unsealed = []
        advance(to: entry)
    }

    private mutating func advance(to entry: Entry) {
        beforePrevious = previous
        previous = entry
    }

    /// Unsealed lines between two sealed ones: a crash's torn line (not JSON) is no tampering; a
    /// complete record without its seal is.
    private mutating func settleUnsealed() {
        for line in unsealed {
            if line.isRecord {
                problem(line.file, line.line, .unsealed, "a record without its seq and digest amid sealed lines")
            } else {
                result.tornLines.append((line.file, line.line))
            }
        }
        unsealed = []
    }

    mutating func finish() {
        if let (first, expected) = jump {
            problem(first.file, first.line, .removed, "seq \(expected)…\(first.sequence - 1) missing before this line")
            jump = nil
        }
        if result.sealedLines == 0 {
            // A log written before chaining: nothing to check, nothing tampered with.
            result.unsealedPrefix = unsealed.count
            unsealed = []
        }
        settleUnsealed()
        let order = Dictionary(result.files.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        result.problems.sort { (order[$0.file] ?? 0, $0.line) < (order[$1.file] ?? 0, $1.line) }
    }

    private mutating func problem(
        _ file: String, _ line: Int, _ kind: AuditLogVerification.Problem.Kind, _ message: String
    ) {
        result.problems.append(.init(file: file, line: line, kind: kind, message: message))
    }
}
