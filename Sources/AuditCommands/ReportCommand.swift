import ArgumentParser
import AuditPolicy
import AuditReport
import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// `audit report`: summarize audit logs as JSON, Markdown and HTML.
struct ReportCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Summarize audit logs (plain or .gz) into summary.json, summary.md and summary.html.",
        discussion:
            "Times are ISO 8601 (2026-11-21T10:00:00Z) or dates (2026-11-21, midnight UTC); --until is exclusive."
    )

    @Argument(help: "Audit logs (JSON Lines, optionally gzip-compressed); each is read with its rotated files.")
    var logs: [String]

    @Option(name: .long, help: "The folder to write the reports to.")
    var out = "reports"

    @Option(name: .long, help: "Comma-separated formats: json, md, html.")
    var format = "json,md,html"

    @Option(name: .long, help: "Count requests at or after this time.")
    var since: String?

    @Option(name: .long, help: "Count requests before this time.")
    var until: String?

    @Option(name: .long, help: "A policies folder, to list rules without hits.")
    var policies: String?

    @Flag(
        name: .long,
        help: "The arguments are summary.json files (one per machine), merged into one report without the logs.")
    var merge = false

    func validate() throws {
        _ = try formats()
        _ = try Self.time(since, option: "--since")
        _ = try Self.time(until, option: "--until")
    }

    private func formats() throws -> [ReportWriter.Format] {
        try format.split(separator: ",").map { name in
            guard let format = ReportWriter.Format(rawValue: name.trimmingCharacters(in: .whitespaces)) else {
                throw ValidationError("unknown format '\(name)' (expected json, md, html)")
            }
            return format
        }
    }

    static func time(_ text: String?, option: String) throws -> Date? {
        guard let text else { return nil }
        if let date = try? Date.ISO8601FormatStyle(includingFractionalSeconds: true).parse(text) { return date }
        if let date = try? Date.ISO8601FormatStyle().parse(text) { return date }
        if let date = try? Date.ISO8601FormatStyle().year().month().day().parse(text) { return date }
        throw ValidationError("\(option): '\(text)' is not a time (use 2026-11-21 or 2026-11-21T10:00:00Z)")
    }

    func run() throws {
        if merge { return try runMerge() }
        let policy = try policies.map { try loadPolicy(directory: $0, option: "--policies DIR") }
        let writer = ReportWriter(
            since: try Self.time(since, option: "--since"), until: try Self.time(until, option: "--until"),
            policy: policy
        )
        let showsProgress = isatty(STDERR_FILENO) == 1
        let reading: ReportWriter.Reading
        let paths: [String]
        do {
            reading = try writer.summarize(logs: logs) { records, bytes, size in
                guard showsProgress else { return }
                CommandOutput.current.writeError(Self.progressBar(records: records, bytes: bytes, size: size))
            }
            if showsProgress { CommandOutput.current.writeError("\r\u{1B}[K") }
            paths = try writer.write(reading.report, formats: try formats(), to: out)
        } catch let error as AuditLogError {
            CommandOutput.errorLine(error.description)
            throw ExitCode.failure
        }
        let report = reading.report
        let sequences = reading.sequences
        let files = report.logs
        if files != logs { CommandOutput.line("read " + files.joined(separator: ", ")) }
        CommandOutput.line("wrote " + paths.joined(separator: ", "))
        printTotals(report)
        for sequence in sequences {
            if sequence.recordsRotatedAway > 0 {
                CommandOutput.line(
                    "\(plural(sequence.recordsRotatedAway, "record")) rotated away before these files, as the log notes"
                )
            }
            for gap in sequence.problems where gap.kind == .removed || gap.kind == .reordered || gap.kind == .inserted {
                CommandOutput.line("sequence gap: \(gap)")
            }
        }
        if report.skippedLines > 0 {
            CommandOutput.line("skipped \(plural(report.skippedLines, "invalid log line")) (\(report.tornLines) torn)")
        }
    }

    /// The request count, time span and verdict table of `report`, and what the cache saved per
    /// cache rule and per host when a cache rule matched.
    private func printTotals(_ report: SummaryReport) {
        CommandOutput.line(
            "\(report.totalRequests) requests, \(report.firstRequest.map { "\($0)" } ?? "-") to \(report.lastRequest.map { "\($0)" } ?? "-")"
        )
        CommandOutput.line("verdict       requests    share")
        for verdict in Verdict.Action.allCases {
            let count = report.verdicts[verdict.rawValue] ?? 0
            let share = report.totalRequests > 0 ? Double(count) * 100 / Double(report.totalRequests) : 0
            CommandOutput.line(
                verdict.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0)
                    + String(format: "%11d %7.1f %%", count, share)
            )
        }
        guard let rules = report.cacheByRule, !rules.isEmpty else { return }
        printCacheTable("cache rule", rules)
        printCacheTable("cache host", report.cacheByHost ?? [])
    }

    /// One cache table: a row per rule or host, named in a column as wide as the longest name.
    private func printCacheTable(_ title: String, _ rows: [SummaryReport.CacheCount]) {
        let width = max(20, (rows.map(\.name.count).max() ?? 0) + 1)
        CommandOutput.line(
            title.padding(toLength: width + 3, withPad: " ", startingAt: 0)
                + "requests    hits  hit ratio  stored  bytes saved")
        for row in rows {
            CommandOutput.line(
                row.name.padding(toLength: width, withPad: " ", startingAt: 0)
                    + String(
                        format: "%11d %7d %8.1f %% %7d %12d", row.requests, row.hits, row.hitRatio * 100, row.stored,
                        row.bytesSaved))
        }
    }

    /// `--merge`: one report from per-machine summaries.
    private func runMerge() throws {
        var summaries: [SummaryReport] = []
        for path in logs {
            guard let data = FileManager.default.contents(atPath: path) else {
                CommandOutput.errorLine("\(path): cannot read the file")
                throw ExitCode.failure
            }
            do {
                summaries.append(try SummaryMerger.summary(from: data, path: path))
            } catch {
                CommandOutput.errorLine(error.description)
                throw ExitCode.failure
            }
        }
        let merged = SummaryMerger.merge(summaries)
        let paths = try ReportWriter().write(merged, formats: try formats(), to: out)
        CommandOutput.line("merged \(plural(summaries.count, "summary", plural: "summaries"))")
        CommandOutput.line("wrote " + paths.joined(separator: ", "))
        printTotals(merged)
    }

    private static func progressBar(records: Int, bytes: Int, size: Int) -> String {
        guard size > 0 else { return "\r\(records) records" }
        let fraction = min(1, Double(bytes) / Double(size))
        let filled = Int(fraction * 30)
        return "\r[" + String(repeating: "#", count: filled) + String(repeating: ".", count: 30 - filled) + "] "
            + String(format: "%3.0f%%", fraction * 100) + " \(records) records"
    }
}
