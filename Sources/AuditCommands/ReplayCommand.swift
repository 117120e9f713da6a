import ArgumentParser
import AuditPipeline
import AuditPolicy
import AuditReport
import Foundation

/// `audit replay`: evaluate recorded traffic offline and write audit records.
struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract: "Evaluate recorded traffic (HAR 1.2 files, request lists) offline and append audit records to a log.",
        discussion: """
            Inputs ending in .har (or starting with '{') are read as HAR 1.2; others as lists of 'URL' or \
            'METHOD URL' lines. Malformed entries are reported with their position and skipped. Nothing is sent \
            to the network.
            """
    )

    @Argument(help: "HAR files and request lists.")
    var inputs: [String]

    @Option(name: .long, help: "The folder of .rules files.")
    var policies = "policies"

    @Option(name: .long, help: "The JSON Lines audit log to append to.")
    var log: String

    @Option(name: .customLong("on-error"), help: "When a match fails: block (fail closed) or pass (ignore the rule).")
    var onError = MatchErrorHandling.block

    @Option(name: .long, help: "The time given to entries without one (list lines); default: now.")
    var start: String?

    @OptionGroup var logKey: LogKeyOptions

    func validate() throws {
        _ = try ReportCommand.time(start, option: "--start")
    }

    func run() throws {
        let policy = try loadPolicy(directory: policies)
        let chainKey = try logKey.key()
        let summary: ReplaySummary
        do throws(AuditLogError) {
            // Rotated at 10 MiB, and no file ever deleted: a replay keeps every record.
            let writer = try AuditLogWriter(path: log, rotation: .keepingEverything, chainKey: chainKey)
            let startTime = (try? ReportCommand.time(start, option: "--start")) ?? nil
            summary = try Replayer(policy: policy, onError: onError).replay(
                inputs, into: writer, defaultTime: startTime ?? Date())
            try waitForShutdown(of: writer)
        } catch {
            CommandOutput.errorLine(error.description)
            throw ExitCode.failure
        }
        for problem in summary.problems { CommandOutput.errorLine(problem.description) }
        CommandOutput.line(
            "replayed \(plural(summary.requests, "request")) from \(plural(inputs.count, "file")) into \(log)")
        let counts = Verdict.Action.allCases.map { "\($0.rawValue) \(summary.verdicts[$0] ?? 0)" }
        CommandOutput.line("  " + counts.joined(separator: " · "))
        if !summary.problems.isEmpty {
            CommandOutput.line(
                "skipped \(plural(summary.problems.count, "malformed entry", plural: "malformed entries"))")
        }
    }
}
