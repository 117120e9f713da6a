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

/// Runs `body` to its end from synchronous command code and returns what it returns.
func waitFor<Value: Sendable>(_ body: @escaping @Sendable () async throws(AuditLogError) -> Value) throws(AuditLogError)
    -> Value
{
    let result = Mutex<Result<Value, AuditLogError>?>(nil)
    let done = DispatchSemaphore(value: 0)
    Task {
        let outcome: Result<Value, AuditLogError>
        do throws(AuditLogError) {
            outcome = .success(try await body())
        } catch {
            outcome = .failure(error)
        }
        result.withLock { $0 = outcome }
        done.signal()
    }
    done.wait()
    // The task set the result before it signalled.
    return try (result.withLock { $0 } ?? .failure(.writeFailed(path: "-", reason: "no result"))).get()
}

/// Waits for `writer` to write, sync and close its log, from synchronous command code.
func waitForShutdown(of writer: AuditLogWriter) throws(AuditLogError) {
    try waitFor { () async throws(AuditLogError) in try await writer.shutdown() }
}
