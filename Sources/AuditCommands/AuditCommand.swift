import ArgumentParser

/// The `audit` command-line tool: check URLs, lint policies, run policy tests, replay traffic,
/// summarize logs, and audit any client through a proxy.
///
/// Exit codes: 0 success; 1 a policy error, lint error or failing policy test; 64 a usage error.
public struct AuditCommand: AsyncParsableCommand {
    /// The command's name, help and subcommands.
    public static let configuration = CommandConfiguration(
        commandName: "audit",
        abstract: "Audit HTTP requests against PCRE2 policy rules, replay recorded traffic, and summarize audit logs.",
        discussion: """
            Exit codes: 0 success; 1 policy errors, lint errors or failing policy tests; 64 usage errors.
            """,
        version: "0.1.0",
        subcommands: [
            CheckCommand.self, LintCommand.self, TestCommand.self, ReplayCommand.self, ReportCommand.self,
            DiffCommand.self, LearnCommand.self,
            ProxyCommand.self, VerifyCommand.self,
        ]
    )

    /// Creates the command; ArgumentParser fills it in from the arguments.
    public init() {}
}
