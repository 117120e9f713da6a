import Foundation

/// The JSON encoding shared by the log writer, the reader and the event stream: ISO 8601 times with
/// milliseconds, sorted keys, unescaped slashes.
enum AuditLogCoding {
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(timestamp(date))
        }
        return encoder
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            let withFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
            if let date = try? withFraction.parse(text) { return wholeMilliseconds(date) }
            if let date = try? Date.ISO8601FormatStyle().parse(text) { return wholeMilliseconds(date) }
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "invalid ISO 8601 time '\(text)'")
        }
        return decoder
    }
}

extension AuditLogCoding {
    /// `date` as `2026-11-21T19:53:12.565Z`: UTC, whole milliseconds (rounded to the nearest).
    static func timestamp(_ date: Date) -> String {
        let milliseconds = Int64((date.timeIntervalSince1970 * 1_000).rounded())
        // Whole seconds rounded down, so that the fraction is 0–999 before 1970 too.
        let wholeSeconds = milliseconds >= 0 ? milliseconds / 1_000 : (milliseconds - 999) / 1_000
        let fraction = Int(milliseconds - wholeSeconds * 1_000)
        let base = Date.ISO8601FormatStyle().format(Date(timeIntervalSince1970: Double(wholeSeconds)))
        let digits = String(fraction)
        return base.dropLast() + "." + String(repeating: "0", count: 3 - digits.count) + digits + "Z"
    }

    /// `date` rounded to whole milliseconds, the precision the log keeps.
    static func wholeMilliseconds(_ date: Date) -> Date {
        Date(timeIntervalSince1970: Double(Int64((date.timeIntervalSince1970 * 1_000).rounded())) / 1_000)
    }
}

extension Date {
    /// This date rounded to whole milliseconds, the precision audit logs keep: a record made with
    /// such a time reads back equal.
    public var roundedToAuditLogPrecision: Date { AuditLogCoding.wholeMilliseconds(self) }
}

extension AuditRecord {
    /// The record as one JSON line, without the newline.
    ///
    /// Written by a hand-written line encoder, which gives what `JSONEncoder` gives in a fraction of the
    /// time, or by `JSONEncoder` for the records it leaves.
    public func jsonLine() throws -> String {
        String(decoding: try jsonLineBytes(), as: UTF8.self)
    }

    /// ``jsonLine()`` as UTF-8, as the log writer seals and writes it.
    func jsonLineBytes() throws -> [UInt8] {
        if let line = AuditLogLineEncoder.lineBytes(self) { return line }
        return [UInt8](try AuditLogCoding.encoder().encode(self))
    }
}
