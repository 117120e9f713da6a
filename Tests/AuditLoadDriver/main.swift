import Foundation
import RequestAudit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

// A host process for the crash test: audits COUNT concurrent GETs of BASE/get?n=N against the policies
// in DIR, logging to LOG, then shuts down. The test kills it with SIGKILL halfway.
//   AuditLoadDriver DIR LOG BASE COUNT
let arguments = CommandLine.arguments
guard arguments.count == 5, let count = Int(arguments[4]) else {
    FileHandle.standardError.write(Data("usage: AuditLoadDriver DIR LOG BASE COUNT\n".utf8))
    exit(64)
}
var configuration = AuditorConfiguration()
configuration.logPath = arguments[2]
let auditor = try Auditor(policy: Policy(directory: arguments[1]), configuration: configuration)
let sessionConfiguration = URLSessionConfiguration.ephemeral
try auditor.install(into: sessionConfiguration)
let session = URLSession(configuration: sessionConfiguration)
await withTaskGroup(of: Void.self) { group in
    for number in 0..<count {
        guard let url = URL(string: "\(arguments[3])/get?n=\(number)") else { exit(64) }
        group.addTask { _ = try? await session.data(from: url) }
        if number % 32 == 31 { await group.next() }
    }
}
try await auditor.shutdown()
print("done")
