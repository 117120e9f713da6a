import AuditPolicy
import Foundation

/// One request of recorded traffic, with what the recording knows of its response.
public struct ReplayEntry: Sendable, Equatable {
    /// The request.
    public var request: AuditRequest
    /// When it was made, if the recording says.
    public var time: Date?
    /// Response status, if recorded (HAR status 0 means none).
    public var status: Int?
    /// Response body bytes, if recorded.
    public var bytes: Int?
    /// Request body bytes, if recorded.
    public var requestBodyBytes: Int?
    /// Total time in milliseconds, if recorded.
    public var durationMilliseconds: Double?
    /// Where the entry is, for messages (`file:line` or `file: entry N`).
    public var position: String
}

extension ReplayEntry {
    /// The request of an audit log's record as it was decided (its canonical URL, headers as
    /// logged), with the record's time and what its outcome says of the response.
    public init(record: AuditRecord, position: String) {
        request = AuditRequest(
            method: record.request.method, url: record.request.url,
            headers: record.request.headers.map { AuditRequest.Header(name: $0.name, value: $0.value) })
        time = record.time
        status = record.outcome.status
        bytes = record.outcome.bytes
        requestBodyBytes = record.request.bodyBytes
        durationMilliseconds = record.outcome.durationMilliseconds
        self.position = position
    }
}

/// An entry of recorded traffic that could not be read; it is skipped and counted.
public struct ReplayProblem: Error, Sendable, Equatable, CustomStringConvertible {
    /// Where: `file:line:column` for lists, `file:line` for audit logs, `file: entry N` for HAR files.
    public let position: String
    /// What is wrong.
    public let message: String

    /// `position: error: message`.
    public var description: String { "\(position): error: \(message)" }
}

extension ReplayProblem {
    /// A line of an audit log that is not a record, at `file:line`.
    init(_ problem: AuditLogProblem) {
        position = "\(problem.file):\(problem.line)"
        message = "\(problem.isTornLastLine ? "torn last line" : "not a record"): \(problem.reason)"
    }
}

/// Reads recorded traffic: HAR 1.2 files (`.har`, or any file starting with `{`), audit logs
/// (`.jsonl`, `.jsonl.gz`: each record's request as it was decided) and request lists
/// (`[METHOD] URL` per line, `#` comments).
public enum TrafficReader {
    /// Whether `path` names an audit log (`.jsonl`, `.jsonl.gz`, or a rotated file such as
    /// `.jsonl.3`) rather than a HAR file or a request list.
    public static func isAuditLog(_ path: String) -> Bool {
        var name = Substring(path.lowercased())
        if name.hasSuffix(".gz") { name = name.dropLast(3) }
        if let dot = name.lastIndex(of: "."), name.index(after: dot) < name.endIndex,
            name[name.index(after: dot)...].allSatisfy({ $0.isASCII && $0.isNumber })
        {
            name = name[..<dot]
        }
        return name.hasSuffix(".jsonl")
    }

    /// The entries and problems of the file at `path`.
    ///
    /// - Throws: ``AuditLogError/cannotReadTraffic(path:reason:)`` when the file cannot be read
    ///   (``AuditLogError/cannotOpen(path:reason:)`` for an audit log).
    public static func read(path: String) throws(AuditLogError) -> (entries: [ReplayEntry], problems: [ReplayProblem]) {
        var entries: [ReplayEntry] = []
        let problems = try forEachEntry(path: path) { entries.append($0) }
        return (entries, problems)
    }

    /// The requests of a request list that is not a file (standard input, say), named `name` in
    /// problems: `URL` or `METHOD URL` per line (a line without a method gets `defaultMethod`), `#`
    /// comments and blank lines skipped. A URL of any scheme is read (`app://`, which a policy may
    /// answer); one without a scheme is a problem at its line and column.
    public static func requestList(_ data: Data, name: String, defaultMethod: String) -> (
        requests: [AuditRequest], problems: [ReplayProblem]
    ) {
        let (entries, problems) = RequestListReader.read(
            data, file: name, defaultMethod: defaultMethod, anyScheme: true)
        return (entries.map(\.request), problems)
    }

    /// Calls `body` with each entry of the file at `path`, in order, and returns the problems. An
    /// audit log is read with its rotated files, oldest first, as `audit report` reads it, in
    /// constant memory whatever its size.
    ///
    /// - Throws: ``AuditLogError/cannotReadTraffic(path:reason:)`` when the file cannot be read
    ///   (``AuditLogError/cannotOpen(path:reason:)`` for an audit log).
    public static func forEachEntry(path: String, _ body: (ReplayEntry) -> Void) throws(AuditLogError)
        -> [ReplayProblem]
    {
        if isAuditLog(path) {
            var problems: [ReplayProblem] = []
            try AuditLogReader.forEachFile(ofLog: path) { file in
                problems += try AuditLogReader.forEachRecord(atPath: file) {
                    body(ReplayEntry(record: $0, position: file))
                }.map(ReplayProblem.init)
            }
            return problems
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .cannotReadTraffic(path: path, reason: UnreadableFile.reason(path))
        }
        let firstByte = data.first { ![0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }
        let (entries, problems) =
            path.lowercased().hasSuffix(".har") || firstByte == UInt8(ascii: "{")
            ? HARReader.read(data, file: path) : RequestListReader.read(data, file: path)
        entries.forEach(body)
        return problems
    }
}
