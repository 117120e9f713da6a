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

    /// The policy of `--policies`.
    func policy() throws -> Policy { try loadPolicy(directory: policies) }

    /// Sets `pipeline`'s log, its rotation and key, what a failed match does, and the shadow policy.
    func configure(_ pipeline: inout PipelineConfiguration) throws {
        pipeline.logPath = log
        pipeline.logRotation = LogRotation(maxBytes: 10 << 20, keep: logKeep ?? LogRotation.keepEverything)
        pipeline.logChainKey = try logKey.key()
        pipeline.onMatchError = onError
        if let shadow { pipeline.shadowPolicy = try loadPolicy(directory: shadow) }
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

    /// Reloads `pipeline`'s policies on SIGHUP through `signals`, and on change with `--watch`.
    func reload(_ pipeline: AuditPipeline, on signals: SignalWatch, command: String) {
        if watch { SignalWatch.watch(pipeline, policies: policies, command: command) }
        signals.onReload(of: pipeline, policies: policies, shadow: shadow, command: command)
    }

    /// What the start line says of these options.
    var note: String {
        "from \(policies), log \(log), warnings \(warn.rawValue)" + (shadow.map { ", shadow \($0)" } ?? "")
            + (watch ? ", watching" : "")
    }
}
