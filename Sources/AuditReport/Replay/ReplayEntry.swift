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

/// An entry of recorded traffic that could not be read; it is skipped and counted.
public struct ReplayProblem: Error, Sendable, Equatable, CustomStringConvertible {
    /// Where: `file:line:column` for lists, `file: entry N` for HAR files.
    public let position: String
    /// What is wrong.
    public let message: String

    /// `position: error: message`.
    public var description: String { "\(position): error: \(message)" }
}

/// Reads recorded traffic: HAR 1.2 files (`.har`, or any file starting with `{`) and request lists
/// (`[METHOD] URL` per line, `#` comments).
public enum TrafficReader {
    /// The entries and problems of the file at `path`.
    ///
    /// - Throws: ``AuditLogError/cannotOpen(path:reason:)`` when the file cannot be read.
    public static func read(path: String) throws(AuditLogError) -> (entries: [ReplayEntry], problems: [ReplayProblem]) {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .cannotOpen(path: path, reason: "cannot read the file")
        }
        let firstByte = data.first { ![0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }
        if path.lowercased().hasSuffix(".har") || firstByte == UInt8(ascii: "{") {
            return HARReader.read(data, file: path)
        }
        return RequestListReader.read(data, file: path)
    }
}
