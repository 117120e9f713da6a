import Foundation

/// Writes an ``AuditRecord`` as one JSON line without Foundation's `JSONEncoder`, which costs tens
/// of microseconds a record, on the path of every audited request.
///
/// The line is byte for byte what ``AuditLogCoding/encoder()`` writes: keys sorted, absent optionals
/// left out, slashes unescaped, `"`, `\` and control characters escaped as `JSONEncoder` escapes
/// them, numbers as it formats them. A record it cannot write that way (a duration that is not a
/// finite number, a time outside years 1970–9999) gets nil, and `JSONEncoder` writes it instead.
enum AuditLogLineEncoder {
    /// The record's line (without the newline), or nil to leave it to `JSONEncoder`.
    static func line(_ record: AuditRecord) -> String? {
        lineBytes(record).map { String(decoding: $0, as: UTF8.self) }
    }

    /// The record's line (without the newline) as UTF-8, or nil to leave it to `JSONEncoder`.
    static func lineBytes(_ record: AuditRecord) -> [UInt8]? {
        guard record.outcome.durationMilliseconds.isFinite, let time = timestamp(record.time) else { return nil }
        var out = JSONLineWriter()
        out.object { out in
            out.key("decision")
            decision(record.decision, &out)
            out.key("id")
            out.uuid(record.id)
            out.key("outcome")
            outcome(record.outcome, &out)
            out.key("request")
            request(record.request, &out)
            out.key("schema")
            out.integer(record.schema)
            out.key("time")
            out.string(time)
            if let warning = record.warning {
                out.key("warning")
                out.object { out in
                    out.key("decidedBy")
                    out.string(warning.decidedBy.rawValue)
                    out.key("decision")
                    out.string(warning.decision.rawValue)
                }
            }
        }
        return out.utf8
    }

    private static func decision(_ decision: DecisionSnapshot, _ out: inout JSONLineWriter) {
        out.object { out in
            if let cacheRule = decision.cacheRule {
                out.key("cacheRule")
                out.string(cacheRule)
            }
            out.optional("category", decision.category)
            out.key("errors")
            out.strings(decision.errors)
            out.optional("message", decision.message)
            out.key("nanoseconds")
            out.integer(decision.nanoseconds)
            out.key("recorded")
            out.strings(decision.recorded)
            out.key("recordedCategories")
            out.strings(decision.recordedCategories)
            out.optional("redirect", decision.redirect)
            out.optional("rule", decision.rule)
            if let shadow = decision.shadow {
                out.key("shadow")
                out.object { out in
                    out.key("recorded")
                    out.strings(shadow.recorded)
                    out.optional("redirect", shadow.redirect)
                    out.optional("rule", shadow.rule)
                    out.key("verdict")
                    out.string(shadow.verdict.rawValue)
                }
            }
            out.key("verdict")
            out.string(decision.verdict.rawValue)
        }
    }

    private static func outcome(_ outcome: OutcomeSnapshot, _ out: inout JSONLineWriter) {
        out.object { out in
            if let bytes = outcome.bytes {
                out.key("bytes")
                out.integer(bytes)
            }
            out.key("durationMilliseconds")
            out.number(outcome.durationMilliseconds)
            if let error = outcome.error {
                out.key("error")
                out.object { out in
                    out.key("code")
                    out.integer(error.code)
                    out.key("description")
                    out.string(error.description)
                    out.key("domain")
                    out.string(error.domain)
                }
            }
            out.optional("finalURL", outcome.finalURL)
            out.optional("forwardedURL", outcome.forwardedURL)
            out.key("kind")
            out.string(outcome.kind.rawValue)
            out.key("redirects")
            out.strings(outcome.redirects)
            if let sentBytes = outcome.sentBytes {
                out.key("sentBytes")
                out.integer(sentBytes)
            }
            if let status = outcome.status {
                out.key("status")
                out.integer(status)
            }
        }
    }

    private static func request(_ request: RequestSnapshot, _ out: inout JSONLineWriter) {
        out.object { out in
            if let bodyBytes = request.bodyBytes {
                out.key("bodyBytes")
                out.integer(bodyBytes)
            }
            if let gateway = request.gateway {
                out.key("gateway")
                out.string(gateway)
            }
            if let gatewayRequestID = request.gatewayRequestID {
                out.key("gatewayRequestID")
                out.string(gatewayRequestID)
            }
            out.key("headers")
            out.array(request.headers) { header, out in
                out.object { out in
                    out.key("name")
                    out.string(header.name)
                    out.key("value")
                    out.string(header.value)
                }
            }
            out.key("host")
            out.string(request.host)
            out.key("method")
            out.string(request.method)
            if let receivedURL = request.receivedURL {
                out.key("receivedURL")
                out.string(receivedURL)
            }
            if let tunnel = request.tunnel {
                out.key("tunnel")
                out.string(tunnel.uuidString)
            }
            out.key("url")
            out.string(request.url)
        }
    }

    /// `date` as ``AuditLogCoding/timestamp(_:)`` writes it, for times from 1970 to 9999.
    static func timestamp(_ date: Date) -> String? {
        let milliseconds = (date.timeIntervalSince1970 * 1_000).rounded()
        guard milliseconds >= 0, milliseconds < 253_402_300_800_000 else { return nil }
        let (seconds, fraction) = Int64(milliseconds).quotientAndRemainder(dividingBy: 1_000)
        let (days, secondOfDay) = seconds.quotientAndRemainder(dividingBy: 86_400)
        let (year, month, day) = CivilDate.date(daysSince1970: Int(days))
        var text: [UInt8] = []
        text.reserveCapacity(24)
        func digits(_ value: Int, _ count: Int) {
            var divisor = 1
            for _ in 1..<count { divisor *= 10 }
            while divisor > 0 {
                text.append(UInt8(ascii: "0") + UInt8(value / divisor % 10))
                divisor /= 10
            }
        }
        digits(year, 4)
        text.append(UInt8(ascii: "-"))
        digits(month, 2)
        text.append(UInt8(ascii: "-"))
        digits(day, 2)
        text.append(UInt8(ascii: "T"))
        digits(Int(secondOfDay / 3_600), 2)
        text.append(UInt8(ascii: ":"))
        digits(Int(secondOfDay / 60 % 60), 2)
        text.append(UInt8(ascii: ":"))
        digits(Int(secondOfDay % 60), 2)
        text.append(UInt8(ascii: "."))
        digits(Int(fraction), 3)
        text.append(UInt8(ascii: "Z"))
        return String(decoding: text, as: UTF8.self)
    }
}

/// Appends JSON to a byte buffer, commas included.
private struct JSONLineWriter {
    private var bytes: [UInt8] = []
    private var needsComma = false

    init() { bytes.reserveCapacity(512) }

    var utf8: [UInt8] { bytes }

    mutating func object(_ body: (inout JSONLineWriter) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "{"))
        needsComma = false
        body(&self)
        bytes.append(UInt8(ascii: "}"))
        needsComma = true
    }

    mutating func array<Element>(_ elements: [Element], _ element: (Element, inout JSONLineWriter) -> Void) {
        separate()
        bytes.append(UInt8(ascii: "["))
        needsComma = false
        for value in elements { element(value, &self) }
        bytes.append(UInt8(ascii: "]"))
        needsComma = true
    }

    mutating func strings(_ values: [String]) {
        array(values) { value, out in out.string(value) }
    }

    /// A key and its colon; the value comes next.
    mutating func key(_ name: String) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        bytes.append(contentsOf: name.utf8)
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ":"))
        needsComma = false
    }

    /// A key and string value when `value` is present; nothing otherwise.
    mutating func optional(_ name: String, _ value: String?) {
        guard let value else { return }
        key(name)
        string(value)
    }

    mutating func string(_ value: String) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        // Most strings need no escape: copied whole.
        let text = value.utf8
        if text.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) {
            for byte in text { appendEscaped(byte) }
        } else {
            bytes.append(contentsOf: text)
        }
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    private mutating func appendEscaped(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
        case UInt8(ascii: "\\"): bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
        case 0x08: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
        case 0x09: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
        case 0x0A: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
        case 0x0C: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
        case 0x0D: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
        case 0..<0x20:
            let hex = Array("0123456789abcdef".utf8)
            bytes.append(contentsOf: Array(#"\u00"#.utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 15)]])
        default: bytes.append(byte)
        }
    }

    mutating func integer(_ value: some BinaryInteger) {
        separate()
        if value < 0 { bytes.append(UInt8(ascii: "-")) }
        // Digits of the magnitude, last first, then reversed into place.
        var magnitude = value.magnitude
        let start = bytes.count
        repeat {
            bytes.append(UInt8(ascii: "0") + UInt8(magnitude % 10))
            magnitude /= 10
        } while magnitude != 0
        bytes[start...].reverse()
        needsComma = true
    }

    /// A UUID as `uuidString` writes it: upper-case hex in groups of 8-4-4-4-12.
    mutating func uuid(_ value: UUID) {
        separate()
        bytes.append(UInt8(ascii: "\""))
        let id = value.uuid
        let raw: InlineArray<16, UInt8> = [
            id.0, id.1, id.2, id.3, id.4, id.5, id.6, id.7, id.8, id.9, id.10, id.11, id.12, id.13, id.14, id.15,
        ]
        for index in raw.indices {
            let byte = raw[index]
            if index == 4 || index == 6 || index == 8 || index == 10 { bytes.append(UInt8(ascii: "-")) }
            bytes.append(Self.upperHex(byte >> 4))
            bytes.append(Self.upperHex(byte & 15))
        }
        bytes.append(UInt8(ascii: "\""))
        needsComma = true
    }

    private static func upperHex(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "A") + nibble - 10
    }

    /// A finite number as `JSONEncoder` writes it: Swift's shortest form, without a trailing `.0`.
    mutating func number(_ value: Double) {
        separate()
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
        needsComma = true
    }

    private mutating func separate() {
        if needsComma { bytes.append(UInt8(ascii: ",")) }
    }
}
