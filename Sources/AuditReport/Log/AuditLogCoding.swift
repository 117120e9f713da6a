import Foundation

/// The JSON encoding shared by the log writer, the reader and the event stream: ISO 8601 times with
/// milliseconds, sorted keys, unescaped slashes.
enum AuditLogCoding {
    static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(Date.ISO8601FormatStyle(includingFractionalSeconds: true).format(date))
        }
        return encoder
    }

    static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let container = try decoder.singleValueContainer()
            let text = try container.decode(String.self)
            let withFraction = Date.ISO8601FormatStyle(includingFractionalSeconds: true)
            if let date = try? withFraction.parse(text) { return date }
            if let date = try? Date.ISO8601FormatStyle().parse(text) { return date }
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "invalid ISO 8601 time '\(text)'")
        }
        return decoder
    }
}

extension AuditRecord {
    /// The record as one JSON line, without the newline.
    public func jsonLine() throws -> String {
        String(decoding: try AuditLogCoding.encoder().encode(self), as: UTF8.self)
    }
}
