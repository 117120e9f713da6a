import AuditPolicy
import AuditReport
import Foundation
import RequestAudit
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// An auditor installed into a fresh session, with a log in a temporary folder.
///
/// Only one auditor is active in a process: a test that stops early (a failed `#require`)
/// uninstalls its auditor as the session goes, so that the tests after it can install theirs.
final class AuditedSession: Sendable {
    let auditor: Auditor
    let session: URLSession
    let direct: URLSession
    let logPath: String

    /// Installs an auditor for `rules` (a `.rules` file, category `test`) into a new ephemeral session.
    init(rules: String = "[record]\nall .", configure: (inout AuditorConfiguration) -> Void = { _ in }) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ra-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        logPath = folder.appendingPathComponent("audit.jsonl").path
        var configuration = AuditorConfiguration()
        configuration.logPath = logPath
        configure(&configuration)
        auditor = try Auditor(policy: Policy(parsing: rules, file: "test.rules"), configuration: configuration)
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        try auditor.install(into: sessionConfiguration)
        session = URLSession(configuration: sessionConfiguration)
        direct = URLSession(configuration: .ephemeral)
    }

    deinit { auditor.uninstall() }

    /// Shuts the auditor down and returns every record of the log.
    func finish() async throws -> [AuditRecord] {
        try await auditor.shutdown()
        session.finishTasksAndInvalidate()
        direct.finishTasksAndInvalidate()
        let (records, problems) = try AuditLogReader.read(atPath: logPath)
        #expect(problems.isEmpty, "log problems: \(problems)")
        return records
    }
}
