import ArgumentParser
import Foundation
import RequestAudit

@main
struct AuditBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "audit-bench",
        abstract: "RequestAudit's benchmarks: every number is a ratio against a baseline measured in the same run.",
        subcommands: [
            All.self, Decisions.self, LoadOne.self, ReportOne.self, WriteLog.self, Interception.self, EncodeOne.self,
            Stream.self, StreamOne.self, Proxies.self, Diff.self, Redactions.self, Hyperscan.self, Reports.self,
            Canonicalization.self, TLSProxies.self, CacheHits.self, Authz.self,
        ], defaultSubcommand: All.self)
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
            let (name, sources, sample) = try Self.ruleSet(set, data: data)
            let start = now()
            let policy = try Policy(sources: sources)
            let loadSeconds = Double(now() - start) / 1e9
            print(
                "\(name): \(policy.rules.count) rules loaded in \(String(format: "%.2f", loadSeconds)) s; "
                    + IndexSummary(policy.indexStatistics).text, to: &standardError)
            if engineOnly {
                if let hot = ProcessInfo.processInfo.environment["HOT_ONLY"] {
                    // For profiling: the first 1,000 URLs (HOT_SAMPLE=count) over and over
                    // (HOT_ONLY=rounds, default 2,000), nothing else; HOT_MINLEN and HOT_MAXLEN
                    // keep only URLs of those lengths in bytes, HOT_CANDIDATES=1 only URLs
                    // with a candidate rule.
                    let rounds = Int(hot) ?? 2_000
                    let sampleSize = Int(ProcessInfo.processInfo.environment["HOT_SAMPLE"] ?? "") ?? 1_000
                    let minimumLength = Int(ProcessInfo.processInfo.environment["HOT_MINLEN"] ?? "") ?? 0
                    let maximumLength = Int(ProcessInfo.processInfo.environment["HOT_MAXLEN"] ?? "") ?? .max
                    let sample = Array(
                        requests.filter { (minimumLength...maximumLength).contains($0.url.utf8.count) }
                            .filter {
                                ProcessInfo.processInfo.environment["HOT_CANDIDATES"] == nil
                                    || !policy.candidateRules(for: $0).isEmpty
                            }
                            .prefix(sampleSize))
                    for request in sample { _ = policy.evaluate(request) }
                    let begin = now()
                    for _ in 0..<rounds { for request in sample { _ = policy.evaluate(request) } }
                    print("hot: \(Double(now() - begin) / Double(rounds * sample.count)) ns/URL", to: &standardError)
                    return
                }
                if ProcessInfo.processInfo.environment["TAIL"] != nil {
                    // For tuning: each URL's best of three decisions and of three index lookups,
                    // grouped by candidate count and by length, and the TAIL=n slowest URLs.
                    var rows: [(UInt64, Int, Int, String)] = []
                    var indexOnly: [Int: (Int, Double, Double)] = [:]
                    for request in requests { _ = policy.evaluate(request) }
                    for request in requests {
                        var best = UInt64.max
                        for _ in 0..<3 {
                            let start = now()
                            _ = policy.evaluate(request)
                            best = min(best, now() - start)
                        }
                        var bestIndex = UInt64.max
                        for _ in 0..<3 {
                            let start = now()
                            _ = policy.candidateRules(for: request)
                            bestIndex = min(bestIndex, now() - start)
                        }
                        let count = policy.candidateRules(for: request).count
                        indexOnly[min(count, 5), default: (0, 0, 0)].0 += 1
                        indexOnly[min(count, 5), default: (0, 0, 0)].1 += Double(bestIndex)
                        indexOnly[min(count, 5), default: (0, 0, 0)].2 += Double(request.url.utf8.count)
                        rows.append((best, count, request.url.utf8.count, request.url))
                    }
                    let sum = rows.reduce(0) { $0 + Double($1.0) }
                    print("mean of best-of-3: \(sum / Double(rows.count)) ns", to: &standardError)
                    var byCandidates: [Int: (Int, Double)] = [:]
                    for row in rows {
                        let key = min(row.1, 5)
                        byCandidates[key, default: (0, 0)].0 += 1
                        byCandidates[key, default: (0, 0)].1 += Double(row.0)
                    }
                    for (key, (n, t)) in byCandidates.sorted(by: { $0.key < $1.key }) {
                        print(
                            "candidates \(key): \(n) URLs, mean \(t / Double(n)) ns, share of time \(t / sum)",
                            to: &standardError)
                    }
                    for (key, (n, t, l)) in indexOnly.sorted(by: { $0.key < $1.key }) {
                        print(
                            "candidates \(key): index only mean \(t / Double(n)) ns, mean length \(l / Double(n))",
                            to: &standardError)
                    }
                    var byLength: [Int: (Int, Double)] = [:]
                    for row in rows {
                        let key = min(row.2 / 100, 10)
                        byLength[key, default: (0, 0)].0 += 1
                        byLength[key, default: (0, 0)].1 += Double(row.0)
                    }
                    for (key, (n, t)) in byLength.sorted(by: { $0.key < $1.key }) {
                        print(
                            "length \(key * 100)+: \(n) URLs, mean \(t / Double(n)) ns, share \(t / sum)",
                            to: &standardError)
                    }
                    rows.sort { $0.0 > $1.0 }
                    for row in rows.prefix(Int(ProcessInfo.processInfo.environment["TAIL"] ?? "") ?? 20) {
                        print("\(row.0) ns \(row.1) cand \(row.2) B \(row.3.prefix(160))", to: &standardError)
                    }
                    return
                }
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
                if let wanted = ProcessInfo.processInfo.environment["CANDIDATES_OF"],
                    let request = requests.first(where: { $0.url.contains(wanted) })
                {
                    // For tuning: which rules run for one URL, and which matched.
                    print(
                        "candidates of \(request.url.prefix(100)) (\(request.url.utf8.count) bytes):",
                        to: &standardError)
                    for rule in policy.candidateRules(for: request) {
                        let matched = (try? rule.pattern.matches(request.normalizedURL)) == true
                        print("  \(matched ? "match" : "     ") \(rule.pattern.source)", to: &standardError)
                    }
                }
            }
            var benchmark = DecisionBenchmark(
                name: name, policy: policy, loadSeconds: loadSeconds, requests: requests,
                naiveSample: engineOnly ? 1 : sample)
            if engineOnly { benchmark.passes = 40 }
            results.append(try benchmark.run())
        }
        print(DecisionTable(results: results).markdown)
    }

    static func ruleSet(_ set: String, data: BenchData) throws -> (String, [PolicySource], Int) {
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
            "| rules | count | always run | engine ns/URL (median of 5) | p50 (median of 3) | p99 (median of 3) | naive loop ns/URL | naive ÷ engine |",
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
            "\(stats.byToken) by token, \(stats.byTokenPair) by token pair, \(stats.byTokenAffix) by token start/end, \(stats.byInfix) by infix, "
            + "\(stats.alwaysRun) always run, \(stats.inHost) by the host alone, \(stats.byShape) answered by their shape; "
            + "busiest keys: \(busiest)"
    }
}

/// Loads one rule set and prints "RULES SECONDS PEAK_BYTES" (run in a fresh process by `all`).
struct LoadOne: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "load-one", shouldDisplay: false)
    @OptionGroup var options: DataOptions
    @Argument var set: String

    func run() throws {
        let (_, sources, _) = try Decisions.ruleSet(set, data: BenchData(directory: options.data))
        let start = now()
        let policy = try Policy(sources: sources)
        let seconds = Double(now() - start) / 1e9
        print("\(policy.rules.count) \(seconds) \(peakResidentBytes())")
    }
}

/// Summarizes a log as `audit report` does and prints "RECORDS SECONDS PEAK_BYTES".
struct ReportOne: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "report-one", shouldDisplay: false)
    @Argument var log: String
    @Argument var output: String

    func run() throws {
        let start = now()
        let writer = ReportWriter()
        let summary = try writer.summarize(logs: [log]).report
        _ = try writer.write(summary, formats: ReportWriter.Format.allCases, to: output)
        print("\(summary.totalRequests) \(Double(now() - start) / 1e9) \(peakResidentBytes())")
    }
}

/// Writes the synthetic log the report benchmark reads, for profiling `audit report` by hand.
struct WriteLog: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "write-log", shouldDisplay: false)
    @Argument var count: Int
    @Argument var path: String

    func run() throws { try writeSyntheticLog(count: count, to: path) }
}

/// Runs only the interception benchmark (section 4 of `all`), for profiling the forwarding path.
struct Interception: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "interception", shouldDisplay: false)
    @OptionGroup var options: DataOptions
    @Option(help: "Requests per session and concurrency (see InterceptionBenchmark.defaultRequests).")
    var interceptionRequests = InterceptionBenchmark.defaultRequests
    @Option(help: "Only this session (direct or audited), for profiling one path.") var only: String?
    @Option(help: "Only this concurrency (1 or 16, say), for profiling one load.") var concurrency: Int?
    @Option(
        help:
            "The audited session's rule set (1k, 10k, all, regex, mix), none (an empty policy), or a folder of rule files."
    )
    var rules = "10k"
    @Option(help: "Milliseconds the server waits before answering (latency-server); 0: nginx answering at once.")
    var latency = 1.0

    func run() async throws {
        let policy: Policy
        var isFolder: ObjCBool = false
        if rules == "none" {
            policy = try Policy(parsing: "")
        } else if FileManager.default.fileExists(atPath: rules, isDirectory: &isFolder), isFolder.boolValue {
            policy = try Policy(directory: rules)
        } else {
            let (_, sources, _) = try Decisions.ruleSet(rules, data: BenchData(directory: options.data))
            policy = try Policy(sources: sources)
        }
        printInterceptionTable(
            try await InterceptionBenchmark(
                policy: policy, requests: interceptionRequests, only: only,
                concurrencies: concurrency.map { [$0] } ?? [1, 16],
                latency: latency > 0 ? .microseconds(Int64(latency * 1_000)) : nil
            ).run())
    }
}

/// Runs only the streamed-download benchmark (section 5 of `all`).
struct Stream: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stream", shouldDisplay: false)

    func run() throws { StreamBenchmark.printTable(try StreamBenchmark().run()) }
}

/// Section 4's table: each session's p50, p99 and requests/s, then audited against direct.
func printInterceptionTable(_ interception: [InterceptionResult]) {
    print("| session | p50 | p99 | requests/s | client CPU a request |")
    print("|---|---:|---:|---:|---:|")
    for result in interception {
        print(
            "| \(result.label) | \(formatNanoseconds(Double(result.p50))) | \(formatNanoseconds(Double(result.p99))) | "
                + String(format: "%.0f", result.requestsPerSecond) + " | "
                + formatNanoseconds(result.cpuNanosecondsPerRequest) + " |")
    }
    // Each concurrency measured both ways gives a direct result, then its audited one.
    for (direct, audited) in zip(interception, interception.dropFirst())
    where direct.label.hasPrefix("direct") && audited.label.hasPrefix("audited") {
        print(
            "\n\(audited.label) vs \(direct.label): p50 "
                + String(format: "%+.1f %%", (Double(audited.p50) / Double(direct.p50) - 1) * 100)
                + ", requests/s "
                + String(format: "%+.1f %%", (audited.requestsPerSecond / direct.requestsPerSecond - 1) * 100)
                + ", client CPU +"
                + formatNanoseconds(audited.cpuNanosecondsPerRequest - direct.cpuNanosecondsPerRequest)
                + " a request")
    }
}

/// Every benchmark, one table.
struct All: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Runs every benchmark and prints the table.")
    @OptionGroup var options: DataOptions
    @Option(help: "The audit binary to time for reports.") var audit = "../.build/release/audit"
    @Option(help: "Requests per session and concurrency (see InterceptionBenchmark.defaultRequests).")
    var interceptionRequests = InterceptionBenchmark.defaultRequests

    func run() async throws {
        let data = BenchData(directory: options.data)
        let requests = try data.requests(count: options.urls)
        print("# RequestAudit benchmarks\n")
        print(
            "Machine: \(ProcessInfo.processInfo.activeProcessorCount) cores; \(requests.count) URLs from urls-bench.txt.\n"
        )

        print("## 1. Decisions (engine vs the naive PCRE2-JIT loop over the same compiled rules)\n")
        var decisions: [DecisionBenchmark.Result] = []
        var policies: [String: Policy] = [:]
        for set in ["1k", "10k", "all", "regex", "mix"] {
            let (name, sources, sample) = try Decisions.ruleSet(set, data: data)
            let start = now()
            let policy = try Policy(sources: sources)
            let loadSeconds = Double(now() - start) / 1e9
            if set == "1k" || set == "10k" { policies[set] = policy }
            decisions.append(
                try DecisionBenchmark(
                    name: name, policy: policy, loadSeconds: loadSeconds, requests: requests, naiveSample: sample
                ).run())
            print("  \(name) done", to: &standardError)
        }
        print(DecisionTable(results: decisions).markdown + "\n")
        print("Verdicts and recorded sets of engine and naive loop were identical on every sampled URL.\n")

        try HyperscanSection(data: data, requests: requests, policies: policies).print()

        print("\n## 3. Policy load (fresh process each)\n")
        print("| rules | count | load time | peak RSS |")
        print("|---|---:|---:|---:|")
        for set in ["10k", "all", "mix"] {
            let fields = try runSelf(["load-one", set, "--data", options.data]).split(separator: " ")
            guard fields.count == 3, let seconds = Double(fields[1]), let bytes = Int(fields[2]) else {
                throw BenchError("load-one \(set) printed \(fields)")
            }
            print("| \(set) | \(fields[0]) | " + String(format: "%.2f s", seconds) + " | \(bytes / 1_048_576) MB |")
        }

        print(
            "\n## 4. Interception overhead (a local server answering 1 KiB after 1 ms, rules-10k policy, audit log on; "
                + "goal: audited p50 ≤ +5 %, requests/s ≥ 0.95× direct)\n")
        printInterceptionTable(
            try await InterceptionBenchmark(
                policy: policies["10k"] ?? Policy(parsing: ""), requests: interceptionRequests,
                latency: .milliseconds(1)
            ).run())
        print("\n### 4b. The same against nginx answering at once (the layer alone; information, not a goal)\n")
        printInterceptionTable(
            try await InterceptionBenchmark(
                policy: policies["10k"] ?? Policy(parsing: ""), requests: interceptionRequests
            ).run())

        print(
            "\n## 5. Streamed download (local nginx, \(StreamBenchmark.fileBytes / 1_000_000) MB file, a delegate that "
                + "discards each chunk; medians of \(StreamBenchmark.rounds), fresh process each, sessions alternated)\n"
        )
        StreamBenchmark.printTable(try StreamBenchmark().run())

        print(
            "\n## 6. Forward proxies (wrk → proxy → local nginx; audit proxy with the rules-10k policy and its log on, "
                + "Squid with its access log; "
                + "medians of \(ProxyBenchmark.rounds) alternated \(ProxyBenchmark.seconds)-s runs)\n")
        let loaded = try runSelf(["load-one", "10k", "--data", options.data]).split(separator: " ")
        ProxyBenchmark.printTable(
            try ProxyBenchmark(auditBinary: audit, policySource: try data.blockingPolicySource("rules-10k.txt")).run(),
            policyPeakBytes: loaded.count == 3 ? Int(loaded[2]) ?? 0 : 0)

        print(
            "\n## 6b. HTTPS through intercepting proxies (a CONNECT and TLS client → proxy → local nginx over TLS; "
                + "audit proxy --intercept-tls=all with the rules-10k policy and its log on, Squid with its access "
                + "log; medians of "
                + "\(TLSProxyBenchmark.rounds) alternated \(TLSProxyBenchmark.seconds)-s runs)\n")
        TLSProxyBenchmark.printTable(
            try await TLSProxyBenchmark(
                auditBinary: audit, policySource: try data.blockingPolicySource("rules-10k.txt"),
                repository: repositoryRoot
            ).run())

        print(CacheHits.heading)
        try await CacheHits.report(audit: audit)

        print(
            "\n## 7. audit diff (the benchmark URLs as a request list; rules-10k against rules-10k without every tenth "
                + "rule)\n")
        DiffBenchmark.printTable(try DiffBenchmark(auditBinary: audit, data: data).run())

        print("\n## 8. Reports over generated logs\n")
        try ReportBenchmark(auditBinary: audit).printTable()

        print(Authz.heading)
        try await Authz.report(data: data, audit: audit)
    }
}

/// Times `jsonLine()` on one record (for profiling the log writer's encoding).
struct EncodeOne: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "encode-one", shouldDisplay: false)

    func run() throws {
        let policy = try Policy(parsing: "[record]\nall .", file: "s.rules")
        let request = AuditRequest(url: "http://127.0.0.1:28080/small.txt")
        let record = AuditRecord(
            id: UUID(), time: Date().roundedToAuditLogPrecision,
            request: RequestSnapshot(method: "GET", url: request.url, host: "127.0.0.1", headers: []),
            decision: DecisionSnapshot(policy.evaluate(request), nanoseconds: 1234),
            outcome: OutcomeSnapshot(
                kind: .response, status: 200, bytes: 1024, durationMilliseconds: 0.734, forwardedURL: request.url,
                finalURL: request.url))
        let begin = now()
        var total = 0
        for _ in 0..<100_000 { total += try record.jsonLine().utf8.count }
        print("jsonLine: \(Double(now() - begin) / 100_000) ns, \(total / 100_000) bytes")
    }
}

struct Hyperscan: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Section 2 alone: the engine against Hyperscan called from C, the same regexes and URLs.")
    @OptionGroup var options: DataOptions
    @Option(parsing: .upToNextOption, help: "Rule sets to run (1k, 10k).") var sets = ["1k", "10k"]

    func run() throws {
        let data = BenchData(directory: options.data)
        let requests = try data.requests(count: options.urls)
        var policies: [String: Policy] = [:]
        for set in sets { policies[set] = try Policy(sources: try Decisions.ruleSet(set, data: data).1) }
        try HyperscanSection(data: data, requests: requests, policies: policies, sets: sets).print()
    }
}

/// Section 2: the engine against Hyperscan, each set's table row.
struct HyperscanSection {
    let data: BenchData
    let requests: [AuditRequest]
    let policies: [String: Policy]
    var sets = ["1k", "10k"]

    func print() throws {
        Swift.print("## 2. Against Hyperscan 5.4 (same regexes, same normalized URLs, Hyperscan called from C)\n")
        Swift.print(
            "| rules | Hyperscan compile | Hyperscan ns/URL, C function | Hyperscan ns/URL, C program "
                + "| engine ns/URL (passes alternated with Hyperscan's) | engine ÷ Hyperscan (the faster) |")
        Swift.print("|---|---:|---:|---:|---:|---:|")
        let subjects = requests.map { Array($0.normalizedURL.utf8) }
        for set in sets {
            let hyperscan = try HyperscanBenchmark(
                name: set, patterns: try data.lines("rules-\(set).txt"), subjects: subjects,
                policy: policies[set] ?? Policy(parsing: ""), requests: requests
            ).run()
            let engine = hyperscan.engineNanosecondsPerURL
            let fastest = min(hyperscan.nanosecondsPerURL, hyperscan.programNanosecondsPerURL)
            Swift.print(
                "| rules-\(set) (\(hyperscan.patterns) compiled, \(hyperscan.rejected) rejected) | "
                    + String(format: "%.1f s", hyperscan.compileSeconds)
                    + (hyperscan.isCompileCached ? " (cached)" : "") + " | "
                    + "\(formatNanoseconds(hyperscan.nanosecondsPerURL)) | "
                    + "\(formatNanoseconds(hyperscan.programNanosecondsPerURL)) | \(formatNanoseconds(engine)) | "
                    + String(format: "%.2f×", engine / fastest) + " |")
        }
    }
}

/// The repository that holds this benchmark package (for its test scripts).
let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().path

/// `audit-bench cache`: section 6c alone.
struct CacheHits: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache", abstract: "Cache hits: audit proxy --cache-dir against Squid's cache; in an app.")
    @Option(help: "The audit binary.") var audit = "../.build/release/audit"

    static let heading =
        "\n## 6c. Cache hits (wrk → caching proxy, warm; audit proxy with a [cache] rule and its log on, Squid with "
        + "cache_dir, cache_mem and its access log; nginx serving the objects itself; medians of \(CacheBenchmark.rounds) alternated "
        + "\(ProxyBenchmark.seconds)-s runs)\n"

    func run() async throws {
        print(Self.heading)
        try await Self.report(audit: audit)
    }

    static func report(audit: String) async throws {
        CacheBenchmark.printTable(try CacheBenchmark(auditBinary: audit).run())
        let app = try await InAppCacheBenchmark().run()
        print(
            String(
                format: "\nIn an app (URLSession, one request at a time, %d per round, %d rounds): a cache hit's p50 "
                    + "%.0f µs, a request straight to nginx %.0f µs (%.2f×)", InAppCacheBenchmark.requests,
                InAppCacheBenchmark.rounds, app.hit, app.direct, app.hit / app.direct))
    }
}

/// `audit-bench tls`: section 6b alone.
struct TLSProxies: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tls", abstract: "HTTPS through audit proxy --intercept-tls, mitmproxy and Squid ssl-bump.")
    @OptionGroup var options: DataOptions
    @Option(help: "The audit binary.") var audit = "../.build/release/audit"

    func run() async throws {
        let data = BenchData(directory: options.data)
        TLSProxyBenchmark.printTable(
            try await TLSProxyBenchmark(
                auditBinary: audit, policySource: try data.blockingPolicySource("rules-10k.txt"),
                repository: repositoryRoot
            ).run())
    }
}
