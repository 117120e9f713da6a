import ArgumentParser
import AuditPolicy
import AuditReport
import Dispatch
import Synchronization

extension MatchErrorHandling: ExpressibleByArgument {}

/// Loads a policy for a command, printing every error and exiting 1 when it does not load. When the
/// folder is missing or holds no rule file, the message names `option`, the way to give another
/// (`--policies DIR`).
func loadPolicy(directory: String, option: String? = nil) throws -> Policy {
    do {
        let policy = try Policy(directory: directory)
        for warning in policy.warnings { CommandOutput.errorLine(warning.description) }
        return policy
    } catch {
        var message = error.description
        switch error {
        case .cannotRead(directory, _), .noRuleFiles:
            if let option { message += " (the folder of .rules files; name yours with \(option))" }
        default: break
        }
        CommandOutput.errorLine(message)
        throw ExitCode.failure
    }
}

/// Waits for `writer` to write, sync and close its log, from synchronous command code.
func waitForShutdown(of writer: AuditLogWriter) throws(AuditLogError) {
    try writer.shutdownAndWait()
}
