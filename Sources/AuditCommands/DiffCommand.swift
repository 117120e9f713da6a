import ArgumentParser
import AuditLocking
import AuditPolicy
import AuditReport
import Dispatch
import Foundation

/// `audit diff`: what replacing one policy by another would change, request by request, on
/// recorded traffic.
struct DiffCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Show every recorded request whose decision changes between two policy folders.",
        discussion: """
            TRAFFIC is HAR files, request lists ('URL' or 'METHOD URL' lines) and audit logs (.jsonl or .jsonl.gz; \
            each logged request is decided again, with the headers as logged, so redacted values stay redacted). \
            A decision changes when its verdict, deciding rule, redirect target or set of recording rules does. \
            Changes are grouped by old verdict → new verdict and rule, with examples, and the last line says how many \
            of the requests change. Exit 0 on success; with --detailed-exitcode, 2 when any decision changes.
            """
    )

    @Argument(help: "The policy folder in force.")
    var old: String

    @Argument(help: "The candidate policy folder.")
    var new: String

    @Argument(help: "HAR files, request lists and audit logs.")
    var traffic: [String]

    @Flag(name: .long, help: "One JSON object per changed request: url, method, old, new.")
    var json = false

    @Option(name: .long, help: "Also write the diff as reports to this folder.")
    var out: String?

    @Option(name: .long, help: "Comma-separated report formats for --out: md, html.")
    var format = "md,html"

    @Flag(name: .customLong("detailed-exitcode"), help: "Exit 2 when any decision changes.")
    var detailedExitCode = false

    @Option(name: .customLong("on-error"), help: "When a match fails: block (fail closed) or pass (ignore the rule).")
    var onError = MatchErrorHandling.block

    func validate() throws {
        _ = try formats()
        if traffic.isEmpty { throw ValidationError("give at least one TRAFFIC file") }
    }

    private func formats() throws -> [String] {
        try format.split(separator: ",").map { name in
            let name = name.trimmingCharacters(in: .whitespaces)
            guard ["md", "html"].contains(name) else {
                throw ValidationError("unknown format '\(name)' (expected md, html)")
            }
            return name
        }
    }

    func run() throws {
        let comparison = PolicyComparison(
            old: try loadPolicy(directory: old), new: try loadPolicy(directory: new), onError: onError)
        var changes = DecisionChanges()
        do throws(AuditLogError) {
            for path in traffic {
                changes.merge(try Self.compare(path, comparison))
            }
        } catch {
            CommandOutput.errorLine(error.description)
            throw ExitCode.failure
        }
        if json {
            for change in changes.changes { CommandOutput.line(Self.jsonLine(change)) }
        } else {
            CommandOutput.current.writeOut(DiffText(changes: changes, old: old, new: new).text)
        }
        let summary = "\(changes.changes.count) of \(plural(changes.total, "request")) change"
        if json { CommandOutput.errorLine(summary) }
        if let out {
            do {
                try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
                let diff = DiffText(changes: changes, old: old, new: new)
                for format in try formats() {
                    let path = out + "/diff." + format
                    try Data((format == "md" ? diff.markdown : diff.html).utf8).write(to: URL(fileURLWithPath: path))
                    CommandOutput.errorLine("wrote \(path)")
                }
            } catch {
                CommandOutput.errorLine("\(out): cannot write the diff: \(error.localizedDescription)")
                throw ExitCode.failure
            }
        }
        if detailedExitCode, !changes.changes.isEmpty { throw ExitCode(2) }
    }

    /// The changes of one traffic file, its requests decided on every core.
    static func compare(_ path: String, _ comparison: PolicyComparison) throws(AuditLogError) -> DecisionChanges {
        var changes = DecisionChanges()
        if TrafficReader.isAuditLog(path) {
            try AuditLogReader.forEachFile(ofLog: path) { file in
                let problems = try AuditLogReader.reduceRecords(
                    atPath: file, into: { DecisionChanges() },
                    add: { partial, record in
                        partial.add(comparison.change(for: ReplayEntry(record: record, position: file).request))
                    }, merge: { changes.merge($0) })
                for problem in problems { CommandOutput.errorLine(problem.description) }
            }
            return changes
        }
        let (entries, problems) = try TrafficReader.read(path: path)
        for problem in problems { CommandOutput.errorLine(problem.description) }
        let chunkSize = 4_096
        let chunks = (entries.count + chunkSize - 1) / chunkSize
        let results = ChunkResults(count: chunks)
        DispatchQueue.concurrentPerform(iterations: chunks) { chunk in
            var partial = DecisionChanges()
            for entry in entries[(chunk * chunkSize)..<min(entries.count, (chunk + 1) * chunkSize)] {
                partial.add(comparison.change(for: entry.request))
            }
            results.set(chunk, partial)
        }
        for partial in results.all { changes.merge(partial) }
        return changes
    }

    /// One line of `--json`: keys in a fixed order, absent values as `null`.
    static func jsonLine(_ change: DecisionChange) -> String {
        func string(_ text: String?) -> String {
            guard let text else { return "null" }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.withoutEscapingSlashes]
            return (try? encoder.encode(text)).map { String(decoding: $0, as: UTF8.self) } ?? "null"
        }
        func decision(_ summary: DecisionSummary) -> String {
            "{\"verdict\":\(string(summary.verdict.rawValue)),\"rule\":\(string(summary.rule)),"
                + "\"redirect\":\(string(summary.redirect)),\"recorded\":["
                + summary.recorded.map { string($0) }.joined(separator: ",") + "]}"
        }
        return "{\"url\":\(string(change.request.url)),\"method\":\(string(change.request.method)),"
            + "\"old\":\(decision(change.old)),\"new\":\(decision(change.new))}"
    }
}

/// Results of concurrent chunks, kept in chunk order.
private final class ChunkResults: Sendable {
    private let slots: Locked<[DecisionChanges]>

    init(count: Int) { slots = Locked(Array(repeating: DecisionChanges(), count: count)) }

    func set(_ index: Int, _ value: DecisionChanges) { slots.withLock { $0[index] = value } }

    var all: [DecisionChanges] { slots.withLock { $0 } }
}

/// The diff for people: text, Markdown and HTML.
struct DiffText {
    let changes: DecisionChanges
    let old: String
    let new: String

    private func describe(_ change: DecisionChange) -> String {
        var line = "\(change.request.method) \(change.request.url): \(change.old.text) → \(change.new.text)"
        if change.old.verdict == change.new.verdict, change.old.rule == change.new.rule {
            if change.old.redirect != change.new.redirect {
                line += "; redirect \(change.old.redirect ?? "-") → \(change.new.redirect ?? "-")"
            }
            if change.old.recorded != change.new.recorded {
                line +=
                    "; recorded [\(change.old.recorded.joined(separator: ", "))] → [\(change.new.recorded.joined(separator: ", "))]"
            }
        }
        return line
    }

    private func title(_ group: DecisionChanges.Group) -> String {
        "\(group.old.rawValue) → \(group.new.rawValue)" + (group.rule.map { " (\($0))" } ?? "")
    }

    private var summary: String { "\(changes.changes.count) of \(plural(changes.total, "request")) change" }

    var text: String {
        var lines: [String] = []
        for (group, count) in changes.groups {
            lines.append("\(title(group)): \(plural(count, "request"))")
            for example in changes.examples[group] ?? [] { lines.append("  " + describe(example)) }
        }
        lines.append(summary)
        return lines.joined(separator: "\n") + "\n"
    }

    var markdown: String {
        var lines = ["# Policy diff: \(old) → \(new)", "", summary, ""]
        if !changes.groups.isEmpty {
            lines += ["| old → new | rule | requests |", "|---|---|---:|"]
            for (group, count) in changes.groups {
                lines.append("| \(group.old.rawValue) → \(group.new.rawValue) | \(group.rule ?? "–") | \(count) |")
            }
            lines += ["", "## Examples", ""]
            for (group, _) in changes.groups {
                lines.append("### \(title(group))")
                lines.append("")
                for example in changes.examples[group] ?? [] { lines.append("- `\(describe(example))`") }
                lines.append("")
            }
        }
        return lines.joined(separator: "\n") + "\n"
    }

    var html: String {
        func escape(_ text: String) -> String {
            text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
                .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
        }
        var rows = ""
        for (group, count) in changes.groups {
            let examples = (changes.examples[group] ?? []).map { "<li><code>\(escape(describe($0)))</code></li>" }
                .joined()
            rows +=
                "<tr><td>\(group.old.rawValue) → \(group.new.rawValue)</td><td>\(escape(group.rule ?? "–"))</td>"
                + "<td class=\"n\">\(count)</td><td><ul>\(examples)</ul></td></tr>\n"
        }
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8"><title>Policy diff</title>
            <style>body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:4px 8px;vertical-align:top}.n{text-align:right}ul{margin:0;padding-left:1.2em}</style>
            </head><body>
            <h1>Policy diff: \(escape(old)) → \(escape(new))</h1>
            <p>\(escape(summary))</p>
            <table><tr><th>old → new</th><th>rule</th><th>requests</th><th>examples</th></tr>
            \(rows)</table>
            </body></html>

            """
    }
}
