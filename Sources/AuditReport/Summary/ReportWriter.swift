import AuditPolicy
import Foundation

/// Reads audit logs, summarizes them and writes the chosen report formats.
public struct ReportWriter: Sendable {
    /// The report formats.
    public enum Format: String, Sendable, CaseIterable {
        /// `summary.json`
        case json
        /// `summary.md`
        case md
        /// `summary.html`
        case html

        var renderer: any ReportRenderer {
            switch self {
            case .json: JSONReportRenderer()
            case .md: MarkdownReportRenderer()
            case .html: HTMLReportRenderer()
            }
        }
    }

    /// Records with `since <= time < until` are counted.
    public var since: Date?
    /// See ``since``.
    public var until: Date?
    /// When given, rules without hits are listed.
    public var policy: Policy?

    /// Creates a writer.
    public init(since: Date? = nil, until: Date? = nil, policy: Policy? = nil) {
        self.since = since
        self.until = until
        self.policy = policy
    }

    /// Streams `logs` (plain or `.gz`) into a summary; `progress` gets (records, bytes of the current log, its size).
    ///
    /// Each log is decoded and counted on every core (see ``AuditLogReader/reduceRecords(atPath:onBytesRead:into:add:merge:)``).
    public func summarize(
        _ logs: [String], progress: ((_ records: Int, _ bytes: Int, _ size: Int) -> Void)? = nil
    ) throws -> SummaryReport {
        /// A run of lines' counts, and how many records it read.
        struct Counted: Sendable {
            var builder: SummaryBuilder
            var records = 0
        }
        var builder = SummaryBuilder(since: since, until: until)
        var records = 0
        for log in logs {
            let size = (try? FileManager.default.attributesOfItem(atPath: log)[.size] as? Int) ?? 0
            var bytes = 0
            let problems = try AuditLogReader.reduceRecords(
                atPath: log, onBytesRead: { bytes = $0 },
                into: { [since, until] in Counted(builder: SummaryBuilder(since: since, until: until)) },
                add: { counted, record in
                    counted.builder.add(record)
                    counted.records += 1
                },
                merge: { counted in
                    builder.merge(counted.builder)
                    let before = records
                    records += counted.records
                    if records / 5_000 != before / 5_000 { progress?(records, bytes, size) }
                })
            builder.skipped(problems)
        }
        progress?(records, 0, 0)
        return builder.build(logs: logs, policy: policy)
    }

    /// Writes `report` in each of `formats` into `directory` (created if needed); returns the paths.
    public func write(_ report: SummaryReport, formats: [Format], to directory: String) throws -> [String] {
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        return try formats.map { format in
            let renderer = format.renderer
            let path = (directory as NSString).appendingPathComponent(renderer.fileName)
            try Data(try renderer.render(report).utf8).write(to: URL(fileURLWithPath: path))
            return path
        }
    }
}
