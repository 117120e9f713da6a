import ArgumentParser
import AuditPolicy

/// `audit lint`: report every problem in a policies folder.
struct LintCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lint",
        abstract: "Report every problem in the rule and test files of a folder.",
        discussion: "Prints FILE:LINE:COLUMN: error: MESSAGE per problem; exits 1 if there is any error."
    )

    @Argument(help: "The policies folder.")
    var directory = "policies"

    @Flag(help: "Also show how the rules are indexed: how many are found by token and how many run for every request.")
    var stats = false

    func run() throws {
        let report: LintReport
        do {
            report = try PolicyLinter.lint(directory: directory)
        } catch {
            CommandOutput.errorLine(error.description)
            throw ExitCode.failure
        }
        for diagnostic in report.diagnostics { CommandOutput.line(diagnostic.description) }
        let files = "\(plural(report.ruleFiles.count, "rule file")) and \(plural(report.testFiles.count, "test file"))"
        if report.diagnostics.isEmpty {
            CommandOutput.line("\(directory): no problems in \(files) (\(plural(report.ruleCount, "rule")))")
        } else {
            CommandOutput.line(
                "\(directory): \(plural(report.errorCount, "error")), \(plural(report.warningCount, "warning")) in \(files)"
            )
        }
        if report.hasErrors { throw ExitCode.failure }
        if stats { try printStatistics() }
    }

    private func printStatistics() throws {
        let statistics: IndexStatistics
        do {
            statistics = try Policy(directory: directory).indexStatistics
        } catch {
            CommandOutput.errorLine(error.description)
            throw ExitCode.failure
        }
        CommandOutput.line("index: \(plural(statistics.rules, "rule"))")
        CommandOutput.line("  found by whole token:        \(statistics.byToken)")
        CommandOutput.line("  found by two tokens:         \(statistics.byTokenPair)")
        CommandOutput.line("  found by token start or end: \(statistics.byTokenAffix)")
        CommandOutput.line("  found by letters in a token: \(statistics.byInfix)")
        CommandOutput.line("  of these, by the host alone: \(statistics.inHost)")
        CommandOutput.line("  run for every request:       \(statistics.alwaysRun)")
        for id in statistics.alwaysRunRuleIDs.prefix(20) { CommandOutput.line("    \(id)") }
        if statistics.alwaysRun > 20 { CommandOutput.line("    … and \(statistics.alwaysRun - 20) more") }
        CommandOutput.line("  answered by their shape:     \(statistics.byShape)")
        let busiest = statistics.busiestKeys.prefix(5).map { "\($0.key) (\($0.rules))" }
        if !busiest.isEmpty { CommandOutput.line("  busiest keys: \(busiest.joined(separator: ", "))") }
    }
}

func plural(_ count: Int, _ noun: String, plural: String? = nil) -> String {
    "\(count) \(count == 1 ? noun : plural ?? noun + "s")"
}
