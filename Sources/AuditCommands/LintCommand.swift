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
    }
}

func plural(_ count: Int, _ noun: String, plural: String? = nil) -> String {
    "\(count) \(count == 1 ? noun : plural ?? noun + "s")"
}
