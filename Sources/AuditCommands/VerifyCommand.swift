import ArgumentParser
import AuditReport
import Foundation

/// `audit verify`: check an audit log's hash chain, with its rotated files.
struct VerifyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify",
        abstract: "Check that audit logs were not edited, cut, reordered or added to (their hash chain).",
        discussion: """
            Each LOG is read with its rotated files, oldest first (LOG.N … LOG.1, LOG). The first edited, removed, \
            inserted or reordered line is reported by file and line. A last line a crash left half-written is \
            reported as torn, not as tampering. Exit codes: 0 intact, 1 tampering found, 64 usage errors.
            """
    )

    @Argument(help: "Audit logs (each is read with its rotated files).")
    var logs: [String]

    @OptionGroup var key: LogKeyOptions

    @Option(help: "A digest published earlier (hex): the log must contain a line with it.")
    var anchor: String?

    func validate() throws {
        _ = try anchorBytes()
    }

    private func anchorBytes() throws -> [UInt8]? {
        guard let anchor else { return nil }
        guard let digest = LogChain.digest(hex: anchor.lowercased().utf8) else {
            throw ValidationError("--anchor: expected 64 hex digits, got '\(anchor)'")
        }
        return digest
    }

    func run() throws {
        var intact = true
        for log in logs {
            let files = AuditLogVerifier.files(forLog: log)
            guard !files.isEmpty else {
                CommandOutput.errorLine("\(log): no such log")
                throw ExitCode.failure
            }
            let result: AuditLogVerification
            do {
                result = try AuditLogVerifier.verify(files: files, key: try key.key(), anchor: try anchorBytes())
            } catch let error as AuditLogError {
                CommandOutput.errorLine(error.description)
                throw ExitCode.failure
            }
            CommandOutput.line("read " + result.files.joined(separator: ", "))
            for problem in result.problems { CommandOutput.line(problem.description) }
            for torn in result.tornLines {
                CommandOutput.line("\(torn.file):\(torn.line): torn line (a crash mid-write), not tampering")
            }
            if !result.rotatedAway.isEmpty {
                CommandOutput.line(
                    "\(plural(result.recordsRotatedAway, "record")) rotated away, as the log notes ("
                        + result.rotatedAway.map(\.file).joined(separator: ", ") + ")")
            }
            if result.unsealedPrefix > 0 {
                CommandOutput.line("\(plural(result.unsealedPrefix, "line")) before the chain starts carry no seal")
            }
            let kind = result.isHMAC ? "HMAC-SHA-256" : "SHA-256"
            let range = result.firstSequence.map { "seq \($0)…\(result.lastSequence ?? $0)" } ?? "no sealed lines"
            if !result.checkedDigests {
                CommandOutput.line("digests not checked: the log is \(kind)-sealed; give its key with --log-key-file")
            }
            if result.isIntact {
                CommandOutput.line(
                    "\(plural(result.records, "record")), \(range), \(kind) chain intact; last digest "
                        + (result.lastDigest.map(LogChain.hex) ?? "-"))
            } else {
                intact = false
                CommandOutput.line("\(log): chain broken: \(plural(result.problems.count, "problem"))")
            }
        }
        if !intact { throw ExitCode.failure }
    }
}
