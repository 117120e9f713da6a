import AuditPolicy
import Foundation

/// Turns a ``SummaryReport`` into a file's text.
public protocol ReportRenderer: Sendable {
    /// The file name the text is written to, e.g. `summary.md`.
    var fileName: String { get }
    /// The text.
    func render(_ report: SummaryReport) throws -> String
}

/// `summary.json`: the report as sorted, indented JSON with ISO 8601 times.
public struct JSONReportRenderer: ReportRenderer {
    /// Creates the renderer.
    public init() {}
    /// `summary.json`.
    public var fileName: String { "summary.json" }

    /// The JSON text, ending with a newline.
    public func render(_ report: SummaryReport) throws -> String {
        let encoder = AuditLogCoding.encoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes]
        return String(decoding: try encoder.encode(report), as: UTF8.self) + "\n"
    }
}

/// Shared wording and number formatting for the text renderers.
enum ReportText {
    static let verdictOrder = Verdict.Action.allCases.map(\.rawValue)

    static func percent(_ part: Int, of total: Int) -> String {
        guard total > 0 else { return "0.0 %" }
        return String(format: "%.1f %%", Double(part) * 100 / Double(total))
    }

    static func duration(_ nanoseconds: UInt64) -> String {
        switch nanoseconds {
        case ..<1_000: "\(nanoseconds) ns"
        case ..<1_000_000: String(format: "%.1f µs", Double(nanoseconds) / 1_000)
        default: String(format: "%.1f ms", Double(nanoseconds) / 1_000_000)
        }
    }

    static func time(_ date: Date?) -> String {
        date.map { AuditLogCoding.timestamp($0) } ?? "-"
    }

    static func bucketLabel(_ date: Date, bucket: String) -> String {
        let stamp = AuditLogCoding.timestamp(date)
        switch bucket {
        case "day": return String(stamp.prefix(10))
        case "hour": return String(stamp.prefix(13)).replacingOccurrences(of: "T", with: " ") + ":00"
        default: return String(stamp.prefix(16)).replacingOccurrences(of: "T", with: " ")
        }
    }
}

/// `summary.md`: tables that read well in a terminal and on a code-hosting site.
public struct MarkdownReportRenderer: ReportRenderer {
    /// Creates the renderer.
    public init() {}
    /// `summary.md`.
    public var fileName: String { "summary.md" }

    /// The Markdown text.
    public func render(_ report: SummaryReport) throws -> String {
        var lines: [String] = ["# RequestAudit summary", ""]
        lines.append(
            "\(report.totalRequests) requests from \(ReportText.time(report.firstRequest)) to \(ReportText.time(report.lastRequest)) (logs: \(report.logs.joined(separator: ", ")))."
        )
        if report.since != nil || report.until != nil {
            lines.append("Filtered to \(ReportText.time(report.since)) ≤ time < \(ReportText.time(report.until)).")
        }
        lines += ["", "## Verdicts", "", "| verdict | requests | share |", "|---|---:|---:|"]
        for verdict in ReportText.verdictOrder {
            let count = report.verdicts[verdict] ?? 0
            lines.append("| \(verdict) | \(count) | \(ReportText.percent(count, of: report.totalRequests)) |")
        }
        lines += ["", "## Categories (deciding rule)", ""]
        lines += table(
            ["category", "requests"] + ReportText.verdictOrder,
            report.categories.map { category in
                [category.category, "\(category.total)"]
                    + ReportText.verdictOrder.map { "\(category.verdicts[$0] ?? 0)" }
            })
        lines += ["", "## Rules", ""]
        lines += table(
            ["rule", "decided", "recorded"], report.rules.map { [$0.rule, "\($0.decided)", "\($0.recorded)"] })
        if let unused = report.rulesWithoutHits {
            lines += [
                "",
                "Rules without hits: " + (unused.isEmpty ? "none." : unused.map { "`\($0)`" }.joined(separator: ", ")),
            ]
        }
        lines += ["", "## Top hosts", ""]
        for verdict in ReportText.verdictOrder {
            guard let hosts = report.topHostsByVerdict[verdict], !hosts.isEmpty else { continue }
            lines.append("- **\(verdict)**: " + hosts.map { "\($0.name) (\($0.count))" }.joined(separator: ", "))
        }
        for category in report.topHostsByCategory.keys.sorted() {
            let hosts = report.topHostsByCategory[category] ?? []
            lines.append(
                "- category **\(category)**: " + hosts.map { "\($0.name) (\($0.count))" }.joined(separator: ", "))
        }
        lines += ["", "## Redirects", ""]
        lines += table(["from", "to", "count"], report.redirects.map { [$0.from, $0.to, "\($0.count)"] })
        if let differences = report.shadowDifferences {
            lines += ["", "## Shadow differences", ""]
            lines += table(
                ["live", "shadow", "rule", "requests"],
                differences.map { [$0.live, $0.shadow, $0.rule ?? "–", "\($0.count)"] })
        }
        if let byRule = report.cacheByRule, let byHost = report.cacheByHost {
            lines += ["", "## Cache", ""]
            lines += table(["rule", "requests", "hits", "hit ratio", "stored", "bytes saved"], byRule.map(\.tableRow))
            lines += [""]
            lines += table(["host", "requests", "hits", "hit ratio", "stored", "bytes saved"], byHost.map(\.tableRow))
        }
        lines += ["", "## Statistics (record rules)", ""]
        lines += table(
            ["rule", "matches"], report.recordedByRule.sorted { $0.key < $1.key }.map { [$0.key, "\($0.value)"] })
        lines.append("")
        lines += table(
            ["category", "matches"],
            report.recordedByCategory.sorted { $0.key < $1.key }.map { [$0.key, "\($0.value)"] })
        lines += ["", "## Requests per \(report.timelineBucket)", ""]
        lines += table(
            ["\(report.timelineBucket) (UTC)", "total"] + ReportText.verdictOrder,
            report.timeline.map { point in
                [
                    ReportText.bucketLabel(point.start, bucket: report.timelineBucket),
                    "\(point.verdicts.values.reduce(0, +))",
                ]
                    + ReportText.verdictOrder.map { "\(point.verdicts[$0] ?? 0)" }
            })
        let time = report.decisionTime
        lines += [
            "", "## Decision time", "",
            "| decisions | p50 | p90 | p99 | max |", "|---:|---:|---:|---:|---:|",
            "| \(time.count) | \(ReportText.duration(time.p50)) | \(ReportText.duration(time.p90)) | \(ReportText.duration(time.p99)) | \(ReportText.duration(time.max)) |",
        ]
        lines += ["", "## Outcomes and errors", ""]
        lines += table(
            ["outcome", "requests"], report.outcomes.sorted { $0.key < $1.key }.map { [$0.key, "\($0.value)"] })
        lines.append("")
        lines += table(
            ["error", "description", "requests"],
            report.errors.map { ["\($0.domain) \($0.code)", $0.description, "\($0.count)"] })
        lines.append("")
        lines.append(
            "Requests with failed matches: \(report.requestsWithMatchErrors). Log lines skipped: \(report.skippedLines) (torn: \(report.tornLines))."
        )
        for example in report.skippedExamples { lines.append("- \(example)") }
        return lines.joined(separator: "\n") + "\n"
    }

    private func table(_ header: [String], _ rows: [[String]]) -> [String] {
        guard !rows.isEmpty else { return ["(none)"] }
        func cell(_ text: String) -> String { text.replacingOccurrences(of: "|", with: "\\|") }
        let align = header.enumerated().map {
            $0.offset == 0 || header[$0.offset] == "description" || header[$0.offset] == "to" ? "---" : "---:"
        }
        return ["| " + header.joined(separator: " | ") + " |", "|" + align.joined(separator: "|") + "|"]
            + rows.map { "| " + $0.map(cell).joined(separator: " | ") + " |" }
    }
}
