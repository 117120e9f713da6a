import ArgumentParser
import AuditPolicy

/// `audit test`: run the policy's `.test` files.
struct TestCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "test",
        abstract: "Run every .test file of a policies folder against its rules.",
        discussion: """
            Shows each failing case with expected and actual outcomes and ends with 'N passed, M failed'.
            Exits 1 if any case fails or cannot be read.
            """
    )

    @Argument(help: "The policies folder (rules and tests).")
    var directory = "policies"

    @Flag(name: .long, help: "List the rules that no test case exercises.")
    var coverage = false

    @Flag(name: .shortAndLong, help: "Show passing cases too.")
    var verbose = false

    @Option(name: .customLong("on-error"), help: "When a match fails: block (fail closed) or pass (ignore the rule).")
    var onError = MatchErrorHandling.block

    func run() throws {
        let policy = try loadPolicy(directory: directory, option: "audit test DIR")
        let report: PolicyTestReport
        do {
            report = try policy.runTests(directory: directory, onError: onError)
        } catch {
            CommandOutput.errorLine(error.description)
            throw ExitCode.failure
        }
        for diagnostic in report.diagnostics { CommandOutput.line(diagnostic.description) }
        for result in report.results where verbose || !result.isPassing { CommandOutput.line(result.description) }
        if coverage {
            let exercised = policy.rules.count - report.unexercisedRules.count
            CommandOutput.line("coverage: \(exercised) of \(plural(policy.rules.count, "rule")) exercised")
            for rule in report.unexercisedRules { CommandOutput.line("  not exercised: \(rule)") }
        }
        CommandOutput.line(report.summary)
        if report.hasFailures { throw ExitCode.failure }
    }
}
