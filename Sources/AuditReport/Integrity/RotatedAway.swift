import Foundation

/// A log file rotation deleted, as the writer notes it in the log before deleting it:
///
/// ```
/// {"logEvent":"rotatedAway","file":"audit.jsonl.5","records":9120,"total":18240,"firstSeq":…,"lastSeq":…,"lastDigest":"…","time":"…","seq":…}
/// ```
///
/// `total` counts every record rotated away so far, this file's included, so the newest note says
/// how many records the log has lost to rotation even after older notes were rotated away too.
public struct RotatedAway: Sendable, Equatable {
    /// The file's path when it was deleted.
    public let file: String
    /// Records it held (deletion notes not counted).
    public let records: Int
    /// Records rotated away from this log so far, this file's included.
    public let total: Int
    /// The first sequence number it held, if its lines were sealed.
    public let firstSequence: Int?
    /// The last sequence number it held, if its lines were sealed.
    public let lastSequence: Int?
    /// The digest of its last line: where the chain of the files that remain starts.
    public let lastDigest: [UInt8]?

    /// What the file at `path` holds, read before it is deleted.
    static func summarize(fileAt path: String, shownAs name: String, totalBefore: Int) -> RotatedAway {
        var records = 0
        var first: SealedLine?
        var last: SealedLine?
        if let data = FileManager.default.contents(atPath: path) {
            let bytes = [UInt8](data)
            for line in bytes.split(separator: UInt8(ascii: "\n")) {
                if !RotatedAway.isNote(line) { records += 1 }
                if let sealed = SealedLine(line) {
                    if first == nil { first = sealed }
                    last = sealed
                }
            }
        }
        return RotatedAway(
            file: name, records: records, total: totalBefore + records, firstSequence: first?.sequence,
            lastSequence: last?.sequence, lastDigest: last?.digest)
    }

    /// The note as a JSON object (not yet sealed).
    var jsonObject: String {
        let time = AuditLogCoding.timestamp(Date())
        var text = #"{"logEvent":"rotatedAway","file":"\#(Self.escaped(file))","records":\#(records),"total":\#(total)"#
        if let firstSequence, let lastSequence { text += #","firstSeq":\#(firstSequence),"lastSeq":\#(lastSequence)"# }
        if let lastDigest { text += #","lastDigest":"\#(lastDigest.hexString)""# }
        return text + #","time":"\#(time)"}"#
    }

    /// The note on `line`, if it is one.
    init?(line: ArraySlice<UInt8>) {
        guard Self.isNote(line),
            let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
            let file = object["file"] as? String, let records = object["records"] as? Int
        else { return nil }
        self.file = file
        self.records = records
        total = object["total"] as? Int ?? records
        firstSequence = object["firstSeq"] as? Int
        lastSequence = object["lastSeq"] as? Int
        lastDigest = (object["lastDigest"] as? String).flatMap { LogChain.digest(hex: $0.utf8) }
    }

    init(file: String, records: Int, total: Int, firstSequence: Int?, lastSequence: Int?, lastDigest: [UInt8]?) {
        self.file = file
        self.records = records
        self.total = total
        self.firstSequence = firstSequence
        self.lastSequence = lastSequence
        self.lastDigest = lastDigest
    }

    /// The `total` of the newest deletion note in the files of the log at `path` (0 when none),
    /// to go on counting after a restart.
    static func totalSoFar(logAt path: String) -> Int {
        var total = 0
        var index = 0
        while true {
            let file = index == 0 ? path : "\(path).\(index)"
            guard let data = FileManager.default.contents(atPath: file) else {
                if index == 0 {
                    index += 1
                    continue
                }
                return total
            }
            for line in [UInt8](data).split(separator: UInt8(ascii: "\n")) where isNote(line) {
                total = max(total, RotatedAway(line: line)?.total ?? 0)
            }
            if total > 0 { return total }
            index += 1
        }
    }

    private static let prefix = Array(#"{"logEvent":"#.utf8)

    /// Whether `line` is a log event (a deletion note) rather than a record.
    static func isNote(_ line: ArraySlice<UInt8>) -> Bool {
        line.starts(with: prefix)
    }

    private static func escaped(_ text: String) -> String {
        text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
    }
}
