import ArgumentParser
import AuditPolicy
import AuditReport
import Dispatch
import Synchronization

extension MatchErrorHandling: ExpressibleByArgument {}

/// Loads a policy for a command, printing every error and exiting 1 when it does not load.
func loadPolicy(directory: String) throws -> Policy {
    do {
        let policy = try Policy(directory: directory)
        for warning in policy.warnings { CommandOutput.errorLine(warning.description) }
        return policy
    } catch {
        CommandOutput.errorLine(error.description)
        throw ExitCode.failure
    }
}

/// Waits for `writer` to write, sync and close its log, from synchronous command code.
func waitForShutdown(of writer: AuditLogWriter) throws(AuditLogError) {
    try writer.shutdownAndWait()
}
