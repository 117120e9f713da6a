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

    /// What reading logs found: their summary, and what checking each plain log's sequence
    /// numbers found.
    public struct Reading: Sendable {
        /// The summary of every log's records.
        public var report: SummaryReport
        /// One check per plain (not `.gz`) log, in the order given: its files, gaps, reordered or
        /// inserted lines, and the records rotation deleted. Digests are not checked (`audit
        /// verify` does that).
        public var sequences: [AuditLogVerification]
    }

    /// Reads each of `logs` with its rotated files, oldest first (`LOG.N` … `LOG.1`, `LOG`), into
    /// one summary, and checks each plain log's sequence numbers in the same pass.
    ///
    /// Each file is decoded and counted on every core (see
    /// ``AuditLogReader/reduceRecords(atPath:onBytesRead:into:add:merge:)``); `progress` gets
    /// (records, bytes of the current file, its size).
    public func summarize(
        logs: [String], progress: ((_ records: Int, _ bytes: Int, _ size: Int) -> Void)? = nil
    ) throws -> Reading {
        var counting = Counting(since: since, until: until)
        var sequences: [AuditLogVerification] = []
        var files: [String] = []
        for log in logs {
            let logFiles = AuditLogReader.files(ofLog: log)
            files += logFiles
            guard !log.hasSuffix(".gz") else {
                for file in logFiles { try counting.read(file, progress: progress, linking: nil) }
                continue
            }
            var walk = ChainWalk(key: nil, checkDigests: false)
            for (index, file) in logFiles.enumerated() {
                walk.begin(file: file)
                let isLastFile = index == logFiles.count - 1
                try counting.read(file, progress: progress) { walk.read($0, file: file, isLastFile: isLastFile) }
            }
            walk.finish()
            sequences.append(walk.result)
        }
        progress?(counting.records, 0, 0)
        return Reading(report: counting.builder.build(logs: files, policy: policy), sequences: sequences)
    }

    /// Streams the log files `logs` (plain or `.gz`, in the order given) into a summary, without
    /// checking sequence numbers; `progress` gets (records, bytes of the current file, its size).
    public func summarize(
        _ logs: [String], progress: ((_ records: Int, _ bytes: Int, _ size: Int) -> Void)? = nil
    ) throws -> SummaryReport {
        var counting = Counting(since: since, until: until)
        for log in logs { try counting.read(log, progress: progress, linking: nil) }
        progress?(counting.records, 0, 0)
        return counting.builder.build(logs: logs, policy: policy)
    }

    /// The counts of the files read so far.
    private struct Counting {
        /// A run of lines' counts, and how many records it read.
        struct Counted: Sendable {
            var builder: SummaryBuilder
            var records = 0
        }

        let since: Date?
        let until: Date?
        var builder: SummaryBuilder
        var records = 0

        init(since: Date?, until: Date?) {
            self.since = since
            self.until = until
            builder = SummaryBuilder(since: since, until: until)
        }

        /// Counts the file at `path`, on every core; `linking` gets its lines' chain links.
        mutating func read(
            _ path: String, progress: ((_ records: Int, _ bytes: Int, _ size: Int) -> Void)?,
            linking: ((ChainLink) -> Void)?
        ) throws {
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            var bytes = 0
            let problems = try AuditLogReader.reduceRecords(
                atPath: path, onBytesRead: { bytes = $0 }, extent: .summary,
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
                }, linking: linking)
            builder.skipped(problems)
        }
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
