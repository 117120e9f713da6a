import ArgumentParser
import Foundation
import RequestAudit

/// `audit diff` over the benchmark URLs: rules-10k against rules-10k without every tenth rule.
/// The time of the comparison is the run's time less that of loading both policies alone
/// (the same command over an empty list), medians of 3; requests/s per core divide by the cores.
struct DiffBenchmark {
    let auditBinary: String
    let data: BenchData

    struct Result {
        let requests: Int
        let changed: String
        let seconds: Double
        let loadSeconds: Double
        var perCore: Double {
            Double(requests) / max(seconds - loadSeconds, 1e-9) / Double(ProcessInfo.processInfo.activeProcessorCount)
        }
    }

    func run() throws -> Result {
        let folder = NSTemporaryDirectory() + "audit-bench-diff-\(getpid())"
        try FileManager.default.createDirectory(atPath: folder + "/old", withIntermediateDirectories: true)
        try FileManager.default.createDirectory(atPath: folder + "/new", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let patterns = try data.lines("rules-10k.txt")
        var old = "@category bench\n[block]\n"
        var new = old
        for (number, pattern) in patterns.enumerated() {
            old += "r\(number + 1) \(pattern)\n"
            if (number + 1) % 10 != 0 { new += "r\(number + 1) \(pattern)\n" }
        }
        try Data(old.utf8).write(to: URL(fileURLWithPath: folder + "/old/bench.rules"))
        try Data(new.utf8).write(to: URL(fileURLWithPath: folder + "/new/bench.rules"))
        let urls = try data.lines("urls-bench.txt")
        try Data((urls.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: folder + "/urls.txt"))
        try Data().write(to: URL(fileURLWithPath: folder + "/empty.txt"))
        var runs: [Double] = []
        var loads: [Double] = []
        var summary = ""
        for _ in 0..<3 {
            let (seconds, output) = try time([folder + "/old", folder + "/new", folder + "/urls.txt"])
            let (load, _) = try time([folder + "/old", folder + "/new", folder + "/empty.txt"])
            runs.append(seconds)
            loads.append(load)
            summary = output
        }
        return Result(requests: urls.count, changed: summary, seconds: median(runs), loadSeconds: median(loads))
    }

    private func time(_ arguments: [String]) throws -> (Double, String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: auditBinary)
        process.arguments = ["diff"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        let start = now()
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let seconds = Double(now() - start) / 1e9
        guard process.terminationStatus == 0 else { throw BenchError("audit diff \(arguments) failed") }
        return (seconds, text.split(separator: "\n").last.map(String.init) ?? "")
    }

    static func printTable(_ result: Result) {
        print("| requests | changed | run (median of 3) | loading both policies | comparing | requests/s per core |")
        print("|---:|---|---:|---:|---:|---:|")
        print(
            "| \(result.requests) | \(result.changed) | " + String(format: "%.2f s", result.seconds) + " | "
                + String(format: "%.2f s", result.loadSeconds) + " | "
                + String(format: "%.2f s", result.seconds - result.loadSeconds) + " | "
                + String(format: "%.0f", result.perCore) + " |")
        print("\nTarget: at least 200,000 requests/s per core.")
    }
}

/// Runs only the `audit diff` benchmark (section 7 of `all`).
struct Diff: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "diff", shouldDisplay: false)
    @OptionGroup var options: DataOptions
    @Option(help: "The audit binary.") var audit = "../.build/release/audit"

    func run() throws {
        DiffBenchmark.printTable(try DiffBenchmark(auditBinary: audit, data: BenchData(directory: options.data)).run())
    }
}
