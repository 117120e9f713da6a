import ArgumentParser
import AuditPipeline
import AuditPolicy
import AuditProxy
import AuditReport

extension ProxyConfiguration.WarningMode: ExpressibleByArgument {}

/// The options of a command that serves requests until stopped (`audit proxy`, `audit authz`): the
/// policy and its reloads, the shadow policy, the log, and what a warning does.
struct ServiceOptions: ParsableArguments {
    @Option(name: .long, help: "The folder of .rules files.")
    var policies = "policies"

    @Option(name: .long, help: "The JSON Lines audit log to append to.")
    var log = "audit.jsonl"

    @Option(
        name: .customLong("log-keep"),
        help:
            "Rotated log files to keep (rotation at 10 MiB); older ones are deleted, each deletion noted in the log. Default: keep all."
    )
    var logKeep: Int?

    @OptionGroup var logKey: LogKeyOptions

    @Option(name: .customLong("on-error"), help: "When a match fails: block (fail closed) or pass (ignore the rule).")
    var onError = MatchErrorHandling.block

    @Option(name: .long, help: "What a warn verdict does: deny (403 until acknowledged) or allow (proceed and record).")
    var warn = ProxyConfiguration.WarningMode.deny

    @Option(
        name: .long, help: "A shadow policy folder: decided beside the live one, never enforced, differences recorded.")
    var shadow: String?

    @Flag(name: .long, help: "Reload the policies when a .rules file changes.")
    var watch = false

    @Option(name: .long, help: "Event-loop threads serving connections (default: one per processor).")
    var threads: Int?

    func validate() throws {
        if let threads, threads < 1 {
            throw ValidationError("--threads: expected a positive number, got \(threads)")
        }
    }

    /// The policy of `--policies`.
    func policy() throws -> Policy { try loadPolicy(directory: policies, option: "--policies DIR") }

    /// Sets `pipeline`'s log, its rotation and key, what a failed match does, and the shadow policy.
    func configure(_ pipeline: inout PipelineConfiguration) throws {
        pipeline.logPath = log
        pipeline.logRotation = LogRotation(maxBytes: 10 << 20, keep: logKeep ?? LogRotation.keepEverything)
        pipeline.logChainKey = try logKey.key()
        pipeline.onMatchError = onError
        if let shadow { pipeline.shadowPolicy = try loadPolicy(directory: shadow, option: "--shadow DIR") }
    }

    /// The pipeline of `policy` and `configuration`, or the error printed (prefixed with `command`)
    /// and a failure exit.
    static func pipeline(policy: Policy, configuration: PipelineConfiguration, command: String) throws
        -> AuditPipeline
    {
        do {
            return try AuditPipeline(policy: policy, configuration: configuration)
        } catch {
            CommandOutput.errorLine("\(command): \(error.description)")
            throw ExitCode.failure
        }
    }

    /// Runs `start` (a listener's), or prints that `command` cannot listen on `address` and fails.
    static func listen(_ command: String, on address: String, _ start: () async throws -> Void) async throws {
        do {
            try await start()
        } catch {
            CommandOutput.errorLine("\(command): cannot listen on \(address): \(SocketErrorReason.of(error))")
            throw ExitCode.failure
        }
    }

    /// Reloads `pipeline`'s policies on SIGHUP through `signals` (and the shadow policy), and on a
    /// rule file's change with `--watch`; each reload is printed, and an error, which keeps the
    /// policy in force.
    func reload(_ pipeline: AuditPipeline, on signals: SignalWatch, command: String) {
        let (policies, shadow) = (self.policies, self.shadow)
        @Sendable func report(_ result: Result<Policy, PipelineError>, isShadow: Bool = false, from folder: String) {
            switch result {
            case .success(let policy):
                let rules = plural(policy.rules.count, "rule")
                CommandOutput.errorLine(
                    "\(command): reloaded " + (isShadow ? "the shadow policy, \(rules)," : rules) + " from \(folder)")
            case .failure(let error):
                CommandOutput.errorLine("\(command): \(error.description)")
            }
        }
        if watch { pipeline.watchPolicies(in: policies) { report($0, from: policies) } }
        signals.onReload {
            let loaded = Result { () throws(PipelineError) in try pipeline.reloadPolicy(from: policies) }
            report(loaded, from: policies)
            guard case .success = loaded, let shadow else { return }
            report(
                Result { () throws(PipelineError) in try pipeline.reloadShadowPolicy(from: shadow) },
                isShadow: true, from: shadow)
        }
    }

    /// The stop line's count of each verdict: `pass 3 · allow 0 · block 1 · …`.
    static func verdictCounts(_ statistics: AuditStatistics) -> String {
        Verdict.Action.allCases.map { "\($0.rawValue) \(statistics.verdicts[$0] ?? 0)" }.joined(separator: " · ")
    }

    /// What the start line says of these options.
    var note: String {
        "from \(policies), log \(log), warnings \(warn.rawValue)" + (shadow.map { ", shadow \($0)" } ?? "")
            + (watch ? ", watching" : "")
    }
}
