import ArgumentParser
import AuditPipeline
import AuditPolicy
import AuditReport
import Foundation

/// `audit replay`: evaluate recorded traffic offline and write audit records.
struct ReplayCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "replay",
        abstract:
            "Evaluate recorded traffic (HAR 1.2 files, audit logs, request lists) offline and append audit records to a log.",
        discussion: """
            Inputs ending in .har (or starting with '{') are read as HAR 1.2; audit logs (.jsonl, .jsonl.gz) give \
            each logged request as it was decided, with its time; others are read as lists of 'URL' or \
            'METHOD URL' lines. Malformed entries are reported with their position and skipped. Nothing is sent \
            to the network.
            """
    )

    @Argument(help: "HAR files, audit logs and request lists.")
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
        if let input = inputs.first(where: { Self.isSameFile($0, log) }) {
            throw ValidationError("\(input) is the log this replay appends to; give --log another file")
        }
    }

    /// Whether `first` and `second` name one existing file (however spelled or linked).
    static func isSameFile(_ first: String, _ second: String) -> Bool {
        func identity(_ path: String) -> [AnyHashable]? {
            let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: resolved),
                let device = attributes[.systemNumber] as? AnyHashable,
                let inode = attributes[.systemFileNumber] as? AnyHashable
            else { return nil }
            return [device, inode]
        }
        guard let one = identity(first) else { return false }
        return one == identity(second)
    }

    func run() throws {
        let policy = try loadPolicy(directory: policies, option: "--policies DIR")
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
