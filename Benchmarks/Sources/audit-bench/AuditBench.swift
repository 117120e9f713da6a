import ArgumentParser
import Foundation
import RequestAudit

@main
struct AuditBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit-bench",
        abstract: "RequestAudit's benchmarks: every number is a ratio against a baseline measured in the same run.",
        subcommands: [Decisions.self], defaultSubcommand: Decisions.self)
}

struct DataOptions: ParsableArguments {
    @Option(help: "The shared bench-data folder.") var data = "../shared/bench-data"
    @Option(help: "Benchmark URLs to use (from urls-bench.txt).") var urls = 114_094
}

struct Decisions: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "ns/URL of the engine against the naive PCRE2 loop.")
    @OptionGroup var options: DataOptions
    @Flag(help: "Skip the naive loop and the verdict check (for profiling).") var engineOnly = false
    @Option(parsing: .upToNextOption, help: "Rule sets to run (1k, 10k, all, regex, mix).") var sets = [
        "1k", "10k", "all", "regex", "mix",
    ]

    func run() throws {
        let data = BenchData(directory: options.data)
        let requests = try data.requests(count: options.urls)
        var results: [DecisionBenchmark.Result] = []
        for set in sets {
            let (name, sources, sample) = try ruleSet(set, data: data)
            let start = now()
            let policy = try Policy(sources: sources)
            let loadSeconds = Double(now() - start) / 1e9
            print(
                "\(name): \(policy.rules.count) rules loaded in \(String(format: "%.2f", loadSeconds)) s; "
                    + IndexSummary(policy.indexStatistics).text, to: &standardError)
            if engineOnly {
                var total = 0
                var most = (0, "")
                for request in requests.prefix(5000) {
                    let count = policy.candidateRules(for: request).count
                    total += count
                    if count > most.0 { most = (count, request.url) }
                }
                for id in policy.indexStatistics.alwaysRunRuleIDs.prefix(20) {
                    print("  always: \(policy.rule(id: id)?.pattern.source ?? "")", to: &standardError)
                }
                print("not JIT: \(policy.rules.count { !$0.pattern.isJITCompiled })", to: &standardError)
                print("candidates per URL: \(Double(total) / 5000), most \(most)", to: &standardError)
            }
            var benchmark = DecisionBenchmark(
                name: name, policy: policy, loadSeconds: loadSeconds, requests: requests,
                naiveSample: engineOnly ? 1 : sample)
            if engineOnly { benchmark.passes = 40 }
            results.append(try benchmark.run())
        }
        print(DecisionTable(results: results).markdown)
    }

    func ruleSet(_ set: String, data: BenchData) throws -> (String, [PolicySource], Int) {
        switch set {
        case "1k": ("rules-1k", [try data.blockingPolicySource("rules-1k.txt")], 2_000)
        case "10k": ("rules-10k", [try data.blockingPolicySource("rules-10k.txt")], 300)
        case "all": ("rules-all", [try data.blockingPolicySource("rules-all.txt")], 200)
        case "regex": ("regex-filters-all", [try data.blockingPolicySource("regex-filters-all.txt")], 5_000)
        case "mix": ("policy-mix-all", try data.policyMixSources(), 100)
        case let path where path.hasPrefix("file:"):
            (path, [try BenchData(directory: "/").blockingPolicySource(String(path.dropFirst(6)))], 1_000)
        default: throw ValidationError("unknown rule set '\(set)' (expected 1k, 10k, all, regex, mix)")
        }
    }
}

struct DecisionTable {
    let results: [DecisionBenchmark.Result]
    var markdown: String {
        var lines = [
            "| rules | count | always run | engine ns/URL (median of 5) | p50 | p99 | naive loop ns/URL | naive ÷ engine |",
            "|---|---:|---:|---:|---:|---:|---:|---:|",
        ]
        for result in results {
            let ratio = result.naiveNanosecondsPerURL / result.engineNanosecondsPerURL
            lines.append(
                "| \(result.name) | \(result.ruleCount) | \(result.alwaysRun) | "
                    + "\(formatNanoseconds(result.engineNanosecondsPerURL)) | \(formatNanoseconds(Double(result.p50))) | "
                    + "\(formatNanoseconds(Double(result.p99))) | "
                    + "\(formatNanoseconds(result.naiveNanosecondsPerURL)) (\(result.naiveSample) URLs) | "
                    + String(format: "%.0f×", ratio) + " |")
        }
        return lines.joined(separator: "\n")
    }
}

nonisolated(unsafe) var standardError = StandardError()

struct StandardError: TextOutputStream {
    mutating func write(_ string: String) { FileHandle.standardError.write(Data(string.utf8)) }
}

/// One line about a policy's index.
struct IndexSummary {
    let text: String
    init(_ stats: IndexStatistics) {
        let busiest = stats.busiestKeys.prefix(5).map { "\($0.key) \($0.rules)" }.joined(separator: ", ")
        text =
            "\(stats.byToken) by token, \(stats.byTokenAffix) by token start/end, \(stats.byInfix) by infix, "
            + "\(stats.alwaysRun) always run; busiest keys: \(busiest)"
    }
}
