import Foundation

/// The hash chain that makes an audit log tamper-evident.
///
/// Every line the writer appends ends with its sequence number and a digest that covers the line
/// and the previous line's digest:
///
/// ```
/// {…the record…,"seq":41,"chain":"9f2c…"}        SHA-256, or
/// {…the record…,"seq":41,"hmac":"9f2c…"}         HMAC-SHA-256 under a key
/// ```
///
/// The digest of line *n* is `H(hex(digest of line n−1) + "\n" + body)`, where the body is the
/// line with its `,"chain":"…"` (or `,"hmac":"…"`) member removed, so ending `,"seq":n}`; before
/// the first line the digest is 32 zero bytes. Sequence numbers and digests continue across
/// rotation and restarts: a reopened log goes on from its last line. Anyone can check a log with
/// these two lines of arithmetic (``AuditLogVerifier``, `audit verify`, or a few lines of Python).
public struct LogChain: Sendable {
    /// The sequence number of the last line sealed (0 before the first).
    public private(set) var sequence: Int
    /// The digest of the last line sealed.
    public private(set) var digest: [UInt8]
    /// The HMAC key, or nil for a plain SHA-256 chain.
    public let key: [UInt8]?
    /// ``key`` made ready for hashing.
    private let hmacKey: SHA256.HMACKey?

    /// A chain that starts after `sequence` with `digest` (a new log: 0 and 32 zero bytes).
    public init(sequence: Int = 0, digest: [UInt8] = LogChain.genesis, key: [UInt8]? = nil) {
        self.sequence = sequence
        self.digest = digest
        self.key = key
        hmacKey = key.map(SHA256.HMACKey.init)
    }

    /// The 32 bytes a digest's 64 lower-case hex digits spell (as in a sealed line, a deletion
    /// note or an anchor), or nil when `hex` is not that.
    public static func digest(hex: some Collection<UInt8>) -> [UInt8]? {
        guard hex.count == 64 else { return nil }
        var invalid: UInt8 = 0
        var bytes = [UInt8](repeating: 0, count: 32)
        var index = hex.startIndex
        for position in 0..<32 {
            let high = hexDigitValues[Int(hex[index])]
            hex.formIndex(after: &index)
            let low = hexDigitValues[Int(hex[index])]
            hex.formIndex(after: &index)
            invalid |= (high | low) & 0xF0
            bytes[position] = high << 4 | low
        }
        return invalid == 0 ? bytes : nil
    }

    /// Each byte's value as a lower-case hex digit, or 0xFF (looked up rather than compared, as
    /// random digits defeat branch prediction).
    private static let hexDigitValues: [UInt8] = (0...255).map { byte in
        switch UInt8(byte) {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt8(byte) - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt8(byte) - UInt8(ascii: "a") + 10
        default: 0xFF
        }
    }

    /// `digest` as 64 lower-case hex digits, as lines and `audit verify` show it.
    public static func hex(_ digest: [UInt8]) -> String { digest.hexString }

    /// The digest before the first line: 32 zero bytes.
    public static let genesis = [UInt8](repeating: 0, count: 32)

    /// The member name of the digest: `chain` for SHA-256, `hmac` under a key.
    var memberName: String { key == nil ? "chain" : "hmac" }

    /// Seals one JSON object (`{…}`, no newline): numbers it and appends its digest.
    public mutating func seal(_ object: String) -> String {
        var line: [UInt8] = []
        seal(Array(object.utf8), appendingTo: &line)
        return String(decoding: line, as: UTF8.self)
    }

    /// Seals one JSON object given as UTF-8 (`{…}`, no newline) and appends the sealed line,
    /// without a newline, to `line`.
    mutating func seal(_ object: [UInt8], appendingTo line: inout [UInt8]) {
        // The message is hex(previous digest) "\n" body, built once; the line is the body's bytes
        // without its closing brace, then the digest member.
        var message = digest.hexBytes
        message.reserveCapacity(66 + object.count + 24)
        message.append(UInt8(ascii: "\n"))
        message += object
        if message.last == UInt8(ascii: "}") { message.removeLast() }
        sequence += 1
        message += (message.count > 66 ? ",\"seq\":\(sequence)" : "\"seq\":\(sequence)").utf8
        message.append(UInt8(ascii: "}"))
        digest = hmacKey?.code(for: message) ?? SHA256.hash(message)
        line += message[65..<(message.count - 1)]
        line += ",\"\(memberName)\":\"".utf8
        line += digest.hexBytes
        line += "\"}".utf8
    }

    /// `H(hex(previous) + "\n" + body)`, SHA-256 or HMAC-SHA-256 under `key`.
    static func digest(previous: [UInt8], body: some Collection<UInt8>, key: SHA256.HMACKey?) -> [UInt8] {
        if let key {
            var message = previous.hexBytes
            message.append(UInt8(ascii: "\n"))
            message += body
            return key.code(for: message)
        }
        var hasher = SHA256()
        hasher.update(previous.hexBytes)
        hasher.update(CollectionOfOne(UInt8(ascii: "\n")))
        hasher.update(body)
        return hasher.finalize()
    }

    /// The chain a log at `path` ends with, to continue it: its last sealed line's number and
    /// digest, looked for in the live file and then in its newest rotated file; a new chain when
    /// neither has one.
    public static func resuming(logAt path: String, key: [UInt8]?) -> LogChain {
        for candidate in [path, "\(path).1"] {
            if let last = lastSealedLine(inFileAt: candidate) {
                return LogChain(sequence: last.sequence, digest: last.digest, key: key)
            }
        }
        return LogChain(key: key)
    }

    /// The last complete line of a file that carries a sequence number and digest.
    static func lastSealedLine(inFileAt path: String) -> SealedLine? {
        guard let handle = FileHandle(forReadingAtPath: path) else { return nil }
        defer { try? handle.close() }
        guard let size = try? handle.seekToEnd(), size > 0 else { return nil }
        var window: UInt64 = 64 * 1024
        while true {
            let start = size > window ? size - window : 0
            try? handle.seek(toOffset: start)
            let bytes = [UInt8]((try? handle.readToEnd()) ?? Data())
            let lines = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: true)
            // The first piece may be cut by the window; the last may be a torn line.
            for line in lines.reversed().dropLast(start > 0 ? 1 : 0) {
                if let sealed = SealedLine(line) { return sealed }
            }
            guard start > 0, window < 64 * 1024 * 1024 else { return nil }
            window *= 4
        }
    }
}

/// One line's chain fields, read from its end.
public struct SealedLine: Sendable, Equatable {
    /// The line's sequence number.
    public let sequence: Int
    /// The digest it carries.
    public let digest: [UInt8]
    /// Whether the digest is an HMAC (`"hmac"`) rather than SHA-256 (`"chain"`).
    public let isHMAC: Bool
    /// The line without its digest member, as hashed (ends `,"seq":n}`); empty when read
    /// without it (to check sequence numbers only).
    public let body: ArraySlice<UInt8>

    /// Reads the fields of `line` (no newline); nil when it does not end with them.
    public init?(_ line: ArraySlice<UInt8>) {
        self.init(line, keepingBody: true)
    }

    /// Reads the fields of `line`; with `keepingBody` false, ``body`` is left empty rather than
    /// copied.
    init?(_ line: ArraySlice<UInt8>, keepingBody: Bool) {
        // …,"seq":N,"chain":"<64 hex>"}  — the member is 10 or 9 bytes before the 64 hex digits.
        guard line.count > 80, line.last == UInt8(ascii: "}") else { return nil }
        let end = line.endIndex - 1
        guard line[end - 1] == UInt8(ascii: "\"") else { return nil }
        let hexStart = end - 1 - 64
        guard let digest = LogChain.digest(hex: line[hexStart..<(end - 1)]) else { return nil }
        let memberStart: Int
        if line[(hexStart - Self.chainMember.count)..<hexStart].elementsEqual(Self.chainMember) {
            memberStart = hexStart - Self.chainMember.count
            isHMAC = false
        } else if line[(hexStart - Self.hmacMember.count)..<hexStart].elementsEqual(Self.hmacMember) {
            memberStart = hexStart - Self.hmacMember.count
            isHMAC = true
        } else {
            return nil
        }
        // The sequence number just before: ,"seq":N (at most 18 digits, so it fits an Int).
        var digitsStart = memberStart
        var sequence = 0
        var scale = 1
        while digitsStart > line.startIndex, memberStart - digitsStart < 18, line[digitsStart - 1] >= UInt8(ascii: "0"),
            line[digitsStart - 1] <= UInt8(ascii: "9")
        {
            digitsStart -= 1
            sequence += Int(line[digitsStart] - UInt8(ascii: "0")) * scale
            scale *= 10
        }
        guard digitsStart < memberStart, digitsStart - Self.sequenceKey.count >= line.startIndex,
            line[(digitsStart - Self.sequenceKey.count)..<digitsStart].elementsEqual(Self.sequenceKey)
        else { return nil }
        self.sequence = sequence
        self.digest = digest
        guard keepingBody else {
            body = []
            return
        }
        var body = Array(line[line.startIndex..<memberStart])
        body.append(UInt8(ascii: "}"))
        self.body = body[...]
    }

    private static let chainMember = Array(",\"chain\":\"".utf8)
    private static let hmacMember = Array(",\"hmac\":\"".utf8)
    private static let sequenceKey = Array("\"seq\":".utf8)

}
