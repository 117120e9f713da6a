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
        subcommands: subcommands
    )

    /// Every subcommand; without the TLSInterception trait, `run`, `env` and `ca` say that they need it.
    private static var subcommands: [any ParsableCommand.Type] {
        [
            CheckCommand.self, LintCommand.self, TestCommand.self, ReplayCommand.self, ReportCommand.self,
            DiffCommand.self, LearnCommand.self, ProxyCommand.self, AuthzCommand.self, VerifyCommand.self,
            CacheCommand.self, RunCommand.self, EnvCommand.self, CACommand.self,
        ]
    }

    /// Creates the command; ArgumentParser fills it in from the arguments.
    public init() {}

    /// `arguments` as the parser takes them: a bare `--intercept-tls` (one not followed by `all` or
    /// `selective`) becomes `--intercept-tls=selective`, so that the option's value is optional.
    /// Arguments after `--` are left alone.
    public static func normalizedArguments(_ arguments: [String]) -> [String] {
        var result: [String] = []
        var index = arguments.startIndex
        while index < arguments.endIndex {
            let argument = arguments[index]
            if argument == "--" {
                result += arguments[index...]
                break
            }
            let next = arguments.index(after: index) < arguments.endIndex ? arguments[index + 1] : nil
            if argument == "--intercept-tls", next != "all", next != "selective" {
                result.append("--intercept-tls=selective")
            } else {
                result.append(argument)
            }
            index += 1
        }
        return result
    }

    /// Runs the command on the process's arguments (``normalizedArguments(_:)``). A usage error
    /// found while the subcommand runs (a folder that is not a cache, a pattern that does not
    /// compile) is shown with that subcommand's usage, as one found while parsing is, where
    /// ArgumentParser would show the root's (`audit <subcommand>`); exit 64.
    public static func runFromCommandLine() async {
        let command: any ParsableCommand
        do {
            command = try await asyncParseAsRoot(normalizedArguments(Array(CommandLine.arguments.dropFirst())))
        } catch {
            exit(withError: error)
        }
        do {
            var running = command
            if var asyncCommand = running as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try running.run()
            }
        } catch let error as ValidationError {
            CommandOutput.errorLine(usageError(error, in: type(of: command)))
            exit(withError: ExitCode.validationFailure)
        } catch {
            exit(withError: error)
        }
    }

    /// What a usage error found while `subcommand` runs says: the error, the subcommand's usage,
    /// and where its help is, as ArgumentParser words one found while parsing.
    static func usageError(_ error: ValidationError, in subcommand: any ParsableCommand.Type) -> String {
        let names = commandNames(to: subcommand, from: self) ?? [configuration.commandName ?? "audit"]
        return "Error: \(error.message)\nUsage: \(usageString(for: subcommand))\n"
            + "  See '\(names.joined(separator: " ")) --help' for more information."
    }

    /// The names from `root` down to `subcommand` (`audit cache purge`); nil when it is not under `root`.
    private static func commandNames(to subcommand: any ParsableCommand.Type, from root: any ParsableCommand.Type)
        -> [String]?
    {
        let name = root.configuration.commandName ?? root._commandName
        if ObjectIdentifier(root) == ObjectIdentifier(subcommand) { return [name] }
        for child in root.configuration.subcommands {
            if let names = commandNames(to: subcommand, from: child) { return [name] + names }
        }
        return nil
    }
}
