import Foundation

/// A walk along an audit log's chain, line by line in log order (see ``AuditLogVerifier``): it
/// keeps the last two sealed lines and what is still undecided, so its memory does not grow with
/// the log.
struct ChainWalk: Sendable {
    struct Entry: Sendable {
        let file: String
        let line: Int
        let sequence: Int
        let digest: [UInt8]
        let body: ArraySlice<UInt8>
    }

    let key: [UInt8]?
    /// ``key`` made ready for hashing.
    private let hmacKey: SHA256.HMACKey?
    private(set) var checkDigests: Bool
    private let anchor: [UInt8]?
    private var isAnchorFound = false
    private(set) var result = AuditLogVerification()
    private var notes: [RotatedAway] = []
    private var previous: Entry?
    private var beforePrevious: Entry?
    /// A line whose sequence number jumped: removed lines, or the first of two swapped ones.
    private var jump: (entry: Entry, expected: Int)?
    /// The first sealed line, when it is not seq 1 and no deletion note read so far ends just
    /// before it: settled by ``finish()``, once every note is known.
    private var unanchoredStart: Entry?
    /// Unsealed lines since the last sealed one (after the first; before it they are counted).
    private var unsealed: [(file: String, line: Int, isJSON: Bool)] = []
    /// Unsealed lines before the first sealed one.
    private var unsealedBeforeChain = 0

    /// A walk that checks digests (with `key` for HMACs) unless `checkDigests` is false, and looks
    /// for a line whose digest is `anchor`.
    init(key: [UInt8]?, checkDigests: Bool, anchor: [UInt8]? = nil) {
        self.key = key
        hmacKey = key.map(SHA256.HMACKey.init)
        self.checkDigests = checkDigests
        self.anchor = anchor
        result.checkedDigests = checkDigests
    }

    /// Starts reading `file`, the next file of the log.
    mutating func begin(file: String) {
        result.files.append(file)
    }

    /// Reads the next non-empty line of `file`; `isLastFile` says whether an unterminated line
    /// there is a crash's torn end.
    mutating func read(_ link: ChainLink, file: String, isLastFile: Bool) {
        if let note = link.note { notes.append(note) }
        guard case .sealed(let sealed) = link.kind else {
            if link.isUnterminated, isLastFile {
                result.tornLines.append((file, link.line))
            } else if case .unsealed(let isJSON) = link.kind {
                if result.sealedLines == 0 {
                    unsealedBeforeChain += 1
                } else {
                    unsealed.append((file, link.line, isJSON))
                }
            }
            return
        }
        if !link.isNote { result.records += 1 }
        result.sealedLines += 1
        if result.sealedLines == 1 {
            result.isHMAC = sealed.isHMAC
            if sealed.isHMAC, key == nil { checkDigests = false }
            result.checkedDigests = checkDigests
        }
        if key != nil, !sealed.isHMAC {
            problem(file, link.line, .edited, "the line carries a plain SHA-256 digest, but the log is HMAC-sealed")
        }
        let entry = Entry(
            file: file, line: link.line, sequence: sealed.sequence, digest: sealed.digest, body: sealed.body)
        if sealed.digest == anchor { isAnchorFound = true }
        result.firstSequence = result.firstSequence ?? sealed.sequence
        result.lastSequence = sealed.sequence
        result.lastDigest = sealed.digest
        step(entry)
    }

    /// Whether `entry` chains from `digest`.
    private func chains(_ entry: Entry, from digest: [UInt8]) -> Bool {
        !checkDigests || LogChain.digest(previous: digest, body: entry.body, key: hmacKey) == entry.digest
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
        } else if !settleStart(entry) {
            unanchoredStart = entry
        }
        result.unsealedPrefix = unsealedBeforeChain
        advance(to: entry)
    }

    /// Checks a first line after seq 1 against the deletion note that ends just before it; false
    /// when no note read so far does.
    private mutating func settleStart(_ entry: Entry) -> Bool {
        guard let note = notes.first(where: { $0.lastSequence == entry.sequence - 1 }), let digest = note.lastDigest
        else { return false }
        if !chains(entry, from: digest) {
            problem(
                entry.file, entry.line, .edited,
                "seq \(entry.sequence) does not chain from the last line of \(note.file), which rotation deleted")
        }
        return true
    }

    private mutating func advance(to entry: Entry) {
        beforePrevious = previous
        previous = entry
    }

    /// Unsealed lines between two sealed ones: a crash's torn line (not JSON) is no tampering; a
    /// complete record without its seal is.
    private mutating func settleUnsealed() {
        for line in unsealed {
            if line.isJSON {
                problem(line.file, line.line, .unsealed, "a record without its seq and digest amid sealed lines")
            } else {
                result.tornLines.append((line.file, line.line))
            }
        }
        unsealed = []
    }

    /// Settles what only the end of the log decides; read ``result`` after this.
    mutating func finish() {
        if let (first, expected) = jump {
            problem(first.file, first.line, .removed, "seq \(expected)…\(first.sequence - 1) missing before this line")
            jump = nil
        }
        if let entry = unanchoredStart, !settleStart(entry) {
            problem(
                entry.file, entry.line, .removed,
                "seq 1…\(entry.sequence - 1) missing before the first line, and no rotation noted deleting them")
        }
        unanchoredStart = nil
        if result.sealedLines == 0 {
            // A log written before chaining: nothing to check, nothing tampered with.
            result.unsealedPrefix = unsealedBeforeChain
        }
        settleUnsealed()
        result.rotatedAway = notes
        let order = Dictionary(result.files.enumerated().map { ($1, $0) }, uniquingKeysWith: { first, _ in first })
        result.problems.sort { (order[$0.file] ?? 0, $0.line) < (order[$1.file] ?? 0, $1.line) }
        if let anchor, !isAnchorFound {
            problem(
                result.files.last ?? "-", 0, .anchorMissing,
                "no line has the anchor digest \(anchor.hexString): the lines up to it were changed, "
                    + "or the log was cut before it")
        }
    }

    private mutating func problem(
        _ file: String, _ line: Int, _ kind: AuditLogVerification.Problem.Kind, _ message: String
    ) {
        result.problems.append(.init(file: file, line: line, kind: kind, message: message))
    }
}
