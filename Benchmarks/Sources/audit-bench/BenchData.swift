import Foundation
import RequestAudit

/// The shared benchmark corpora (`../shared/bench-data/`, read in place, never copied).
struct BenchData {
    let directory: String

    /// Non-empty lines of a corpus file.
    func lines(_ name: String) throws -> [String] {
        let path = directory + "/" + name
        guard let data = FileManager.default.contents(atPath: path) else {
            throw BenchError("cannot read \(path) (pass --data DIR, the folder of the shared bench-data)")
        }
        return String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: true)
            .map { $0.hasSuffix("\r") ? String($0.dropLast()) : String($0) }
    }

    /// The benchmark requests: GETs of the first `count` URLs of `urls-bench.txt`.
    func requests(count: Int = .max) throws -> [AuditRequest] {
        try lines("urls-bench.txt").prefix(count).map { AuditRequest(method: "GET", url: $0) }
    }

    /// A rule file blocking every pattern of `file` (caseless, the policy default).
    func blockingPolicySource(_ file: String) throws -> PolicySource {
        let patterns = try lines(file)
        var text = "@category bench\n[block]\n"
        for (number, pattern) in patterns.enumerated() { text += "r\(number + 1) \(pattern)\n" }
        return PolicySource(file: file, text: text)
    }

    /// `policy-mix-all.txt` as three rule files by category: danger warns, the competitor stand-in
    /// blocks, statistics records.
    func policyMixSources() throws -> [PolicySource] {
        let patterns = try lines("policy-mix-all.txt")
        let meta = try lines("policy-mix-meta.tsv").dropFirst()
        var texts: [String: String] = [
            "danger": "@category danger\n[warn]\n", "competitor-standin": "@category competitor\n[block]\n",
            "statistics": "@category statistics\n[record]\n",
        ]
        for (pattern, row) in zip(patterns, meta) {
            let columns = row.split(separator: "\t", omittingEmptySubsequences: false)
            guard columns.count > 1, let number = Int(columns[0]) else { throw BenchError("bad meta row: \(row)") }
            texts[String(columns[1]), default: "@category other\n[block]\n"] += "r\(number) \(pattern)\n"
        }
        return texts.keys.sorted().map { PolicySource(file: "policy-mix-\($0).rules", text: texts[$0] ?? "") }
    }
}

/// A benchmark that cannot go on; the message says why.
struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Monotonic nanoseconds.
func now() -> UInt64 {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_nsec)
}

/// Peak resident set size of this process so far, in bytes (VmHWM).
func peakResidentBytes() -> Int {
    guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        let kilobytes = line.split(separator: " ").compactMap { Int($0) }.first ?? 0
        return kilobytes * 1024
    }
    return 0
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    return sorted[sorted.count / 2]
}

func percentile(_ sorted: [UInt64], _ fraction: Double) -> UInt64 {
    guard !sorted.isEmpty else { return 0 }
    return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
}

/// Formats a duration in nanoseconds with a sensible unit.
func formatNanoseconds(_ value: Double) -> String {
    switch value {
    case ..<1_000: String(format: "%.0f ns", value)
    case ..<1_000_000: String(format: "%.2f µs", value / 1_000)
    case ..<1_000_000_000: String(format: "%.2f ms", value / 1_000_000)
    default: String(format: "%.2f s", value / 1_000_000_000)
    }
}
