import ArgumentParser
import AuditPolicy
import AuditReport
import Foundation

extension PolicyLearner.Mode: ExpressibleByArgument {}

/// `audit learn`: proposes a policy, with its tests, from observed traffic.
struct LearnCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "learn",
        abstract: "Propose a policy and its test file from recorded traffic (HAR files, request lists, audit logs).",
        discussion: """
            --mode allowlist (default) writes an allow rule per host seen (collapsed to the registrable domain when \
            two or more of its hosts were seen) and a block rule for everything else; --mode record writes a record \
            rule per host and first path segment. Beside the rules goes a .test file with a case per distinct \
            (method, host, first path segment) seen, so `audit lint` and `audit test --coverage` pass on the \
            proposal at once.
            """
    )

    @Argument(help: "HAR files, request lists and audit logs.")
    var traffic: [String]

    @Option(name: .long, help: "The folder to write the proposal to.")
    var out: String

    @Option(name: .long, help: "allowlist or record.")
    var mode = PolicyLearner.Mode.allowlist

    @Option(name: .long, help: "The category, and the name of the files written.")
    var category = "learned"

    func validate() throws {
        if traffic.isEmpty { throw ValidationError("give at least one TRAFFIC file") }
        if PolicyLearner.identifier(category) != category {
            throw ValidationError("--category: use lowercase letters, digits and dashes (got '\(category)')")
        }
    }

    func run() throws {
        var requests: [AuditRequest] = []
        do throws(AuditLogError) {
            for path in traffic { requests += try Self.requests(in: path) }
        } catch {
            CommandOutput.errorLine(error.description)
            throw ExitCode.failure
        }
        guard requests.contains(where: { !$0.host.isEmpty }) else {
            CommandOutput.errorLine("no requests in \(traffic.joined(separator: ", ")): nothing to learn from")
            throw ExitCode.failure
        }
        let proposal = PolicyLearner(mode: mode, category: category).propose(requests, sources: traffic)
        let rulesPath = out + "/\(category).rules"
        let testsPath = out + "/\(category).test"
        do {
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            try Data(proposal.rules.utf8).write(to: URL(fileURLWithPath: rulesPath))
            try Data(proposal.tests.utf8).write(to: URL(fileURLWithPath: testsPath))
        } catch {
            CommandOutput.errorLine("\(out): cannot write the proposal: \(error.localizedDescription)")
            throw ExitCode.failure
        }
        CommandOutput.line(
            "learned \(plural(proposal.ruleCount, "rule")) from \(plural(requests.count, "request")): \(rulesPath)")
        CommandOutput.line("wrote \(plural(proposal.caseCount, "test case")): \(testsPath)")
    }

    /// The requests of a HAR file, request list or audit log.
    static func requests(in path: String) throws(AuditLogError) -> [AuditRequest] {
        let (entries, problems) = try TrafficReader.read(path: path)
        for problem in problems { CommandOutput.errorLine(problem.description) }
        return entries.map(\.request)
    }
}
