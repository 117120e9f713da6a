import AuditReport
import Foundation

/// Audit records as OTLP log records, in the JSON encoding of OTLP/HTTP (`/v1/logs`).
///
/// Each record is one log record: its time, a one-line body (`block GET https://…`), a severity
/// (`WARN` for block and warn verdicts, `INFO` otherwise), and attributes that follow
/// OpenTelemetry's HTTP semantic conventions where they exist — `http.request.method`, `url.full`,
/// `server.address`, `http.response.status_code` — plus `audit.verdict`, `audit.rule`,
/// `audit.category`, `audit.outcome`, `audit.request_id` and `audit.duration_ms`. URLs are the
/// record's, redacted exactly as in the log.
enum OTLPLogEncoding {
    /// The body of an `ExportLogsServiceRequest` holding `records`.
    static func request(_ records: [AuditRecord], serviceName: String) -> Data {
        let logRecords = records.map(logRecord)
        let body: [String: Any] = [
            "resourceLogs": [
                [
                    "resource": ["attributes": [attribute("service.name", string: serviceName)]],
                    "scopeLogs": [["scope": ["name": "RequestAudit"], "logRecords": logRecords]],
                ]
            ]
        ]
        return (try? JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])) ?? Data()
    }

    private static func logRecord(_ record: AuditRecord) -> [String: Any] {
        let nanoseconds = String(UInt64(max(0, record.time.timeIntervalSince1970 * 1_000).rounded()) * 1_000_000)
        let verdict = record.decision.verdict.rawValue
        let isWarning = record.decision.verdict == .block || record.decision.verdict == .warn
        var attributes = [
            attribute("http.request.method", string: record.request.method),
            attribute("url.full", string: record.request.url),
            attribute("server.address", string: record.request.host),
            attribute("audit.verdict", string: verdict),
            attribute("audit.outcome", string: record.outcome.kind.rawValue),
            attribute("audit.request_id", string: record.id.uuidString),
            ["key": "audit.duration_ms", "value": ["doubleValue": record.outcome.durationMilliseconds]],
        ]
        if let status = record.outcome.status {
            attributes.append(["key": "http.response.status_code", "value": ["intValue": String(status)]])
        }
        if let rule = record.decision.rule { attributes.append(attribute("audit.rule", string: rule)) }
        if let category = record.decision.category { attributes.append(attribute("audit.category", string: category)) }
        return [
            "timeUnixNano": nanoseconds,
            "observedTimeUnixNano": nanoseconds,
            "severityNumber": isWarning ? 13 : 9,
            "severityText": isWarning ? "WARN" : "INFO",
            "body": ["stringValue": "\(verdict) \(record.request.method) \(record.request.url)"],
            "attributes": attributes,
        ]
    }

    private static func attribute(_ key: String, string: String) -> [String: Any] {
        ["key": key, "value": ["stringValue": string]]
    }
}
