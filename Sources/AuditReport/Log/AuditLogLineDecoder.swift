import AuditPolicy
import Foundation

/// Decodes one audit-log line into an ``AuditRecord`` without Foundation's `JSONDecoder`, which
/// costs about 30 µs a line; `audit report` reads millions.
///
/// It accepts what `JSONDecoder` accepts for the lines this library writes, and gives the same
/// record. Anything it is unsure of (a time not in the writer's `…T…:…:…[.mmm]Z` form, a number
/// with a fraction where an integer belongs, a malformed line) makes it return nil, and the reader
/// falls back to `JSONDecoder`, which decodes the line or says what is wrong with it.
enum AuditLogLineDecoder {
    /// How much of a record to build.
    enum Extent: Sendable {
        /// Every value.
        case whole
        /// What ``SummaryBuilder`` reads. The rest is checked as for `.whole` (so the same lines
        /// decode), then left empty: the request's headers and (unless the verdict is `redirect`)
        /// its URL, the outcome's URLs and redirects, the decision's message.
        case summary
    }

    /// The record on `line`, or nil to let `JSONDecoder` decide.
    static func decode(_ line: ArraySlice<UInt8>, extent: Extent = .whole) -> AuditRecord? {
        JSONLineScanner.scan(line) { record(&$0, extent: extent) }
    }

    private static func record(_ scanner: inout JSONLineScanner, extent: Extent) -> AuditRecord? {
        var schema: Int?
        var id: UUID?
        var time: Date?
        var request: RequestSnapshot?
        var decision: DecisionSnapshot?
        var warning: WarningResolution?
        var outcome: OutcomeSnapshot?
        let isObject = scanner.readObject(RecordField.self) { scanner, field in
            switch field {
            case .schema:
                schema = scanner.readInt()
                return schema != nil
            case .id:
                id = scanner.readPlainString(Self.uuid(bytes:))
                return id != nil
            case .time:
                time = scanner.readPlainString(Self.time(bytes:))
                return time != nil
            case .request:
                // The writer writes the decision first: its verdict says whether a summary needs the URL.
                let keepsURL = extent == .whole || decision.map { $0.verdict == .redirect } ?? true
                request = Self.request(&scanner, keepsURL: keepsURL, keepsHeaders: extent == .whole)
                return request != nil
            case .decision:
                decision = Self.decision(&scanner, keepsMessage: extent == .whole)
                return decision != nil
            case .outcome:
                outcome = Self.outcome(&scanner, keepsURLs: extent == .whole)
                return outcome != nil
            case .warning:
                if scanner.consumeNull() { return true }
                warning = Self.warning(&scanner)
                return warning != nil
            }
        }
        guard isObject, scanner.isAtEnd(), let schema, let id, let time, let request, let decision, let outcome else {
            return nil
        }
        var record = AuditRecord(
            id: id, time: time, request: request, decision: decision, warning: warning, outcome: outcome)
        record.schema = schema
        return record
    }

    /// `2026-11-21T19:53:12.565Z` or `2026-11-21T19:53:12Z`, as the log's decoder would read it.
    static func time(_ text: String) -> Date? {
        time(bytes: Array(text.utf8).span)
    }

    /// ``time(_:)`` on the text's UTF-8 bytes.
    static func time(bytes: Span<UInt8>) -> Date? {
        guard bytes.count == 20 || bytes.count == 24, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            bytes[10] == UInt8(ascii: "T"), bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"),
            bytes[bytes.count - 1] == UInt8(ascii: "Z")
        else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for index in range {
                let digit = Int(bytes[index]) - Int(UInt8(ascii: "0"))
                guard (0...9).contains(digit) else { return nil }
                value = value * 10 + digit
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...daysIn(month: month, year: year)).contains(day), hour < 24, minute < 60,
            second < 60
        else { return nil }
        var milliseconds = 0
        if bytes.count == 24 {
            guard bytes[19] == UInt8(ascii: "."), let fraction = number(20..<23) else { return nil }
            milliseconds = fraction
        }
        let days = CivilDate.daysSince1970(year: year, month: month, day: day)
        let total = ((Int64(days) * 24 + Int64(hour)) * 60 + Int64(minute)) * 60 + Int64(second)
        return Date(timeIntervalSince1970: Double(total * 1_000 + Int64(milliseconds)) / 1_000)
    }

    /// `E621E1F8-C36C-495A-93FC-0C247A3E6E5F` (either case), as `UUID(uuidString:)` reads it.
    static func uuid(_ text: String) -> UUID? {
        uuid(bytes: Array(text.utf8).span)
    }

    /// ``uuid(_:)`` on the text's UTF-8 bytes.
    static func uuid(bytes: Span<UInt8>) -> UUID? {
        guard bytes.count == 36, bytes[8] == UInt8(ascii: "-"), bytes[13] == UInt8(ascii: "-"),
            bytes[18] == UInt8(ascii: "-"), bytes[23] == UInt8(ascii: "-")
        else { return nil }
        // Digits are looked up, not compared: random ids mix letters and digits unpredictably.
        var invalid: UInt8 = 0
        func byte(_ index: Int) -> UInt8 {
            let high = hexDigitValues[Int(bytes[index])]
            let low = hexDigitValues[Int(bytes[index + 1])]
            invalid |= (high | low) & 0xF0
            return high << 4 | low
        }
        let uuid = UUID(
            uuid: (
                byte(0), byte(2), byte(4), byte(6), byte(9), byte(11), byte(14), byte(16), byte(19), byte(21),
                byte(24), byte(26), byte(28), byte(30), byte(32), byte(34)
            ))
        return invalid == 0 ? uuid : nil
    }

    /// Each byte's value as a hex digit of either case, or 0xFF.
    private static let hexDigitValues: [UInt8] = (0...255).map { byte in
        switch UInt8(byte) {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt8(byte) - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt8(byte) - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): UInt8(byte) - UInt8(ascii: "A") + 10
        default: 0xFF
        }
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    private static func request(
        _ scanner: inout JSONLineScanner, keepsURL: Bool, keepsHeaders: Bool
    ) -> RequestSnapshot? {
        var method: String?
        var url: String?
        var host: String?
        var headers: [RequestSnapshot.Header]?
        var bodyBytes: Int?
        var receivedURL: String?
        var tunnel: UUID?
        var gateway: String?
        var gatewayRequestID: String?
        let isObject = scanner.readObject(RequestField.self) { scanner, field in
            switch field {
            case .method:
                method = scanner.readString()
                return method != nil
            case .url:
                url = keepsURL ? scanner.readString() : scanner.skipString() ? "" : nil
                return url != nil
            case .host:
                host = scanner.readString()
                return host != nil
            case .receivedURL:
                if scanner.consumeNull() { return true }
                receivedURL = keepsURL ? scanner.readString() : scanner.skipString() ? "" : nil
                return receivedURL != nil
            case .bodyBytes:
                if scanner.consumeNull() { return true }
                bodyBytes = scanner.readInt()
                return bodyBytes != nil
            case .tunnel:
                if scanner.consumeNull() { return true }
                tunnel = scanner.readString().flatMap(Self.uuid)
                return tunnel != nil
            case .gateway:
                if scanner.consumeNull() { return true }
                gateway = scanner.readString()
                return gateway != nil
            case .gatewayRequestID:
                if scanner.consumeNull() { return true }
                gatewayRequestID = scanner.readString()
                return gatewayRequestID != nil
            case .headers:
                var list: [RequestSnapshot.Header] = []
                let isArray = scanner.readArray { scanner in
                    guard keepsHeaders else { return Self.skipHeader(&scanner) }
                    guard let header = Self.header(&scanner) else { return false }
                    list.append(header)
                    return true
                }
                headers = list
                return isArray
            }
        }
        guard isObject, let method, let url, let host, let headers else { return nil }
        return RequestSnapshot(
            method: method, url: url, host: host, headers: headers, bodyBytes: bodyBytes, receivedURL: receivedURL,
            tunnel: tunnel, gateway: gateway, gatewayRequestID: gatewayRequestID)
    }

    private static func header(_ scanner: inout JSONLineScanner) -> RequestSnapshot.Header? {
        var name: String?
        var value: String?
        let isObject = scanner.readObject(HeaderField.self) { scanner, field in
            switch field {
            case .name:
                name = scanner.readString()
                return name != nil
            case .value:
                value = scanner.readString()
                return value != nil
            }
        }
        guard isObject, let name, let value else { return nil }
        return RequestSnapshot.Header(name: name, value: value)
    }

    /// Reads a header as ``header(_:)`` does, without building it: whether it is one.
    private static func skipHeader(_ scanner: inout JSONLineScanner) -> Bool {
        var seen = (name: false, value: false)
        let isObject = scanner.readObject(HeaderField.self) { scanner, field in
            switch field {
            case .name: seen.name = scanner.skipString()
            case .value: seen.value = scanner.skipString()
            }
            return field == .name ? seen.name : seen.value
        }
        return isObject && seen.name && seen.value
    }

    private static func decision(_ scanner: inout JSONLineScanner, keepsMessage: Bool) -> DecisionSnapshot? {
        var verdict: Verdict.Action?
        var rule: String?
        var category: String?
        var message: String?
        var redirect: String?
        var recorded: [String]?
        var recordedCategories: [String]?
        var errors: [String]?
        var nanoseconds: UInt64?
        var shadow: DecisionSummary?
        var cacheRule: String?
        let isObject = scanner.readObject(DecisionField.self) { scanner, field in
            switch field {
            case .cacheRule: return Self.optionalString(&scanner, into: &cacheRule)
            case .verdict:
                verdict = scanner.readString().flatMap(Verdict.Action.init(rawValue:))
                return verdict != nil
            case .rule: return Self.optionalString(&scanner, into: &rule)
            case .category: return Self.optionalString(&scanner, into: &category)
            case .message:
                return keepsMessage
                    ? Self.optionalString(&scanner, into: &message) : scanner.consumeNull() || scanner.skipString()
            case .redirect: return Self.optionalString(&scanner, into: &redirect)
            case .recorded:
                recorded = scanner.readStringArray()
                return recorded != nil
            case .recordedCategories:
                recordedCategories = scanner.readStringArray()
                return recordedCategories != nil
            case .errors:
                errors = scanner.readStringArray()
                return errors != nil
            case .nanoseconds:
                nanoseconds = scanner.readUInt64()
                return nanoseconds != nil
            case .shadow:
                if scanner.consumeNull() { return true }
                shadow = Self.shadow(&scanner)
                return shadow != nil
            }
        }
        guard isObject, let verdict, let recorded, let recordedCategories, let errors, let nanoseconds else {
            return nil
        }
        var snapshot = DecisionSnapshot(
            verdict: verdict, rule: rule, category: category, message: message, redirect: redirect,
            recorded: recorded, recordedCategories: recordedCategories, errors: errors, nanoseconds: nanoseconds,
            shadow: shadow)
        snapshot.cacheRule = cacheRule
        return snapshot
    }

    private static func shadow(_ scanner: inout JSONLineScanner) -> DecisionSummary? {
        var verdict: Verdict.Action?
        var rule: String?
        var redirect: String?
        var recorded: [String]?
        let isObject = scanner.readObject(ShadowField.self) { scanner, field in
            switch field {
            case .verdict:
                verdict = scanner.readString().flatMap(Verdict.Action.init(rawValue:))
                return verdict != nil
            case .rule: return Self.optionalString(&scanner, into: &rule)
            case .redirect: return Self.optionalString(&scanner, into: &redirect)
            case .recorded:
                recorded = scanner.readStringArray()
                return recorded != nil
            }
        }
        guard isObject, let verdict, let recorded else { return nil }
        return DecisionSummary(verdict: verdict, rule: rule, redirect: redirect, recorded: recorded)
    }

    private static func warning(_ scanner: inout JSONLineScanner) -> WarningResolution? {
        var decision: WarningResolution.Decision?
        var source: WarningResolution.Source?
        let isObject = scanner.readObject(WarningField.self) { scanner, field in
            switch field {
            case .decision:
                decision = scanner.readString().flatMap(WarningResolution.Decision.init(rawValue:))
                return decision != nil
            case .decidedBy:
                source = scanner.readString().flatMap(WarningResolution.Source.init(rawValue:))
                return source != nil
            }
        }
        guard isObject, let decision, let source else { return nil }
        return WarningResolution(decision: decision, decidedBy: source)
    }

    private static func outcome(_ scanner: inout JSONLineScanner, keepsURLs: Bool) -> OutcomeSnapshot? {
        var kind: OutcomeSnapshot.Kind?
        var status: Int?
        var bytes: Int?
        var duration: Double?
        var forwardedURL: String?
        var finalURL: String?
        var redirects: [String]?
        var error: OutcomeSnapshot.ErrorSnapshot?
        var sentBytes: Int?
        let isObject = scanner.readObject(OutcomeField.self) { scanner, field in
            switch field {
            case .kind:
                kind = scanner.readString().flatMap(OutcomeSnapshot.Kind.init(rawValue:))
                return kind != nil
            case .status: return Self.optionalInt(&scanner, into: &status)
            case .bytes: return Self.optionalInt(&scanner, into: &bytes)
            case .sentBytes: return Self.optionalInt(&scanner, into: &sentBytes)
            case .durationMilliseconds:
                duration = scanner.readDouble()
                return duration != nil
            case .forwardedURL:
                guard keepsURLs else { return scanner.consumeNull() || scanner.skipString() }
                return Self.optionalString(&scanner, into: &forwardedURL)
            case .finalURL:
                guard keepsURLs else { return scanner.consumeNull() || scanner.skipString() }
                return Self.optionalString(&scanner, into: &finalURL)
            case .redirects:
                redirects = keepsURLs ? scanner.readStringArray() : scanner.skipStringArray() ? [] : nil
                return redirects != nil
            case .error:
                if scanner.consumeNull() { return true }
                error = Self.error(&scanner)
                return error != nil
            }
        }
        guard isObject, let kind, let duration, let redirects else { return nil }
        return OutcomeSnapshot(
            kind: kind, status: status, bytes: bytes, durationMilliseconds: duration, forwardedURL: forwardedURL,
            finalURL: finalURL, redirects: redirects, error: error, sentBytes: sentBytes)
    }

    private static func error(_ scanner: inout JSONLineScanner) -> OutcomeSnapshot.ErrorSnapshot? {
        var domain: String?
        var code: Int?
        var description: String?
        let isObject = scanner.readObject(ErrorField.self) { scanner, field in
            switch field {
            case .domain:
                domain = scanner.readString()
                return domain != nil
            case .code:
                code = scanner.readInt()
                return code != nil
            case .description:
                description = scanner.readString()
                return description != nil
            }
        }
        guard isObject, let domain, let code, let description else { return nil }
        return OutcomeSnapshot.ErrorSnapshot(domain: domain, code: code, description: description)
    }

    private static func optionalString(_ scanner: inout JSONLineScanner, into value: inout String?) -> Bool {
        if scanner.consumeNull() { return true }
        value = scanner.readString()
        return value != nil
    }

    private static func optionalInt(_ scanner: inout JSONLineScanner, into value: inout Int?) -> Bool {
        if scanner.consumeNull() { return true }
        value = scanner.readInt()
        return value != nil
    }
}

extension DecisionSnapshot {
    /// A snapshot from its stored values, as read back from a log.
    init(
        verdict: Verdict.Action, rule: String?, category: String?, message: String?, redirect: String?,
        recorded: [String], recordedCategories: [String], errors: [String], nanoseconds: UInt64,
        shadow: DecisionSummary? = nil
    ) {
        self.verdict = verdict
        self.rule = rule
        self.category = category
        self.message = message
        self.redirect = redirect
        self.recorded = recorded
        self.recordedCategories = recordedCategories
        self.errors = errors
        self.nanoseconds = nanoseconds
        self.shadow = shadow
    }
}

// Cases are in the order the writer writes the keys (sorted), which the scanner tries first.

private enum RecordField: Int, JSONFields {
    case decision, id, outcome, request, schema, time, warning
    static let keys = keyBytes()
}

private enum RequestField: Int, JSONFields {
    case bodyBytes, gateway, gatewayRequestID, headers, host, method, receivedURL, tunnel, url
    static let keys = keyBytes()
}

private enum HeaderField: Int, JSONFields {
    case name, value
    static let keys = keyBytes()
}

private enum DecisionField: Int, JSONFields {
    case cacheRule, category, errors, message, nanoseconds, recorded, recordedCategories, redirect, rule, shadow,
        verdict
    static let keys = keyBytes()
}

private enum ShadowField: Int, JSONFields {
    case recorded, redirect, rule, verdict
    static let keys = keyBytes()
}

private enum WarningField: Int, JSONFields {
    case decidedBy, decision
    static let keys = keyBytes()
}

private enum OutcomeField: Int, JSONFields {
    case bytes, durationMilliseconds, error, finalURL, forwardedURL, kind, redirects, sentBytes, status
    static let keys = keyBytes()
}

private enum ErrorField: Int, JSONFields {
    case code, description, domain
    static let keys = keyBytes()
}
