import ArgumentParser
import Foundation
import RequestAudit

/// Section 8: `audit report` over generated logs of 100,000 and 1,000,000 sealed events, each
/// timed three times in a fresh process, with the peak memory of summarizing it.
struct ReportBenchmark {
    /// The `audit` binary to time.
    let auditBinary: String

    /// Writes the logs, times the reports and prints the table.
    func printTable() throws {
        print(
            "| events | log size | `audit report` time (median of 3 runs) | runs | peak RSS (same code, fresh process) |"
        )
        print("|---:|---:|---:|---:|---:|")
        let folder = NSTemporaryDirectory() + "audit-bench-report-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for count in [100_000, 1_000_000] {
            let log = folder + "/audit-\(count).jsonl"
            try writeSyntheticLog(count: count, to: log)
            let size = (try? FileManager.default.attributesOfItem(atPath: log)[.size] as? Int) ?? 0
            // The generator's half gigabyte is flushed first, so that the report does not compete
            // with the kernel writing it out.
            sync()
            var runs: [Double] = []
            for _ in 0..<3 {
                let start = now()
                let process = Process()
                process.executableURL = URL(fileURLWithPath: auditBinary)
                process.arguments = ["report", log, "--out", folder + "/out-\(count)"]
                process.standardOutput = FileHandle.nullDevice
                try process.run()
                process.waitUntilExit()
                runs.append(Double(now() - start) / 1e9)
                guard process.terminationStatus == 0 else { throw BenchError("audit report failed on \(log)") }
            }
            let fields = try runSelf(["report-one", log, folder + "/again-\(count)"]).split(separator: " ")
            let peak = fields.count == 3 ? (Int(fields[2]) ?? 0) / 1_048_576 : 0
            print(
                "| \(count) | \(size / 1_048_576) MB | " + String(format: "%.2f s", runs.sorted()[1]) + " | "
                    + runs.map { String(format: "%.2f", $0) }.joined(separator: ", ") + " | \(peak) MB |")
        }
    }
}

/// Runs only the report benchmark (section 8 of `all`).
struct Reports: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "reports", shouldDisplay: false)
    @Option(help: "The audit binary to time.") var audit = "../.build/release/audit"

    func run() throws { try ReportBenchmark(auditBinary: audit).printTable() }
}
