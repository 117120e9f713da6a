import Foundation
import RequestAudit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Cache hits: `audit proxy --cache-dir` against Squid serving the same objects from its cache
/// (`cache_dir` and memory), and nginx serving them itself, for 1 KiB and 1 MiB objects at 1 and 32
/// connections (wrk, medians of alternated runs); and in an app, a hit's p50 against a request
/// straight to nginx.
struct CacheBenchmark {
    static let rounds = 3

    let auditBinary: String

    func run() throws -> (results: [ProxyBenchmark.Case: [String: ProxyBenchmark.Measurement]], names: [String]) {
        let nginx = try LocalNginx()
        defer { nginx.stop() }
        _ = try nginx.addFile(named: "body-1m.bin", bytes: 1_048_576)
        let folder = nginx.directory + "/cache-proxies"
        try FileManager.default.createDirectory(atPath: folder + "/policies", withIntermediateDirectories: true)
        try Data("[cache] ttl=1h\nall ^http://127\\.0\\.0\\.1:[0-9]+/\n".utf8)
            .write(to: URL(fileURLWithPath: folder + "/policies/cache.rules"))
        var contenders = [ProxyBenchmark.Contender(name: "nginx", port: nil, process: nil)]
        defer { for contender in contenders { contender.stop() } }
        contenders.append(
            try ProxyBenchmark.start(
                "audit proxy", auditBinary,
                { port in
                    [
                        "proxy", "--listen", "127.0.0.1:\(port)", "--policies", folder + "/policies", "--log",
                        folder + "/audit.jsonl", "--cache-dir", folder + "/audit-cache",
                    ]
                }, folder: folder))
        if FileManager.default.isExecutableFile(atPath: "/usr/sbin/squid") {
            try Self.prepareSquid(folder: folder)
            contenders.append(
                try ProxyBenchmark.start(
                    "Squid", "/usr/sbin/squid", { port in Self.squidArguments(port: port, folder: folder) },
                    folder: folder))
        }
        let cases = [
            ProxyBenchmark.Case(file: "/small.txt", label: "1 KiB", connections: 1),
            ProxyBenchmark.Case(file: "/small.txt", label: "1 KiB", connections: 32),
            ProxyBenchmark.Case(file: "/body-1m.bin", label: "1 MiB", connections: 1),
            ProxyBenchmark.Case(file: "/body-1m.bin", label: "1 MiB", connections: 32),
        ]
        // Warm both caches, and check that the second request is a hit.
        for contender in contenders.dropFirst() {
            for item in cases where item.connections == 1 {
                let url = "http://127.0.0.1:\(nginx.port)\(item.file)"
                _ = try Self.head(url, through: contender.port)
                let second = try Self.head(url, through: contender.port)
                let isHit =
                    contender.name == "Squid"
                    ? second.contains("X-Cache: HIT") : second.lowercased().contains("\nage: ")
                guard isHit else { throw BenchError("\(contender.name) did not serve \(item.file) from its cache") }
            }
        }
        let results = try ProxyBenchmark.measure(
            cases, through: contenders, rounds: Self.rounds, nginxPort: nginx.port, folder: folder, label: "cache")
        return (results, contenders.map(\.name))
    }

    /// Squid caching every response for an hour, on disk (`cache_dir`) and in memory, as a caching
    /// proxy is deployed, and logging each request as it does by default (`access_log daemon:`), as
    /// audit proxy keeps its audit log; its cache folder made (`squid -z`) before it starts.
    static func squidArguments(port: Int, folder: String) -> [String] {
        let config = """
            http_port 127.0.0.1:\(port)
            http_access allow all
            cache_dir ufs \(folder)/squid-cache 512 16 256
            cache_mem 256 MB
            maximum_object_size 64 MB
            maximum_object_size_in_memory 4 MB
            refresh_pattern . 60 100% 60 override-expire override-lastmod ignore-reload
            access_log daemon:\(folder)/squid-access.log squid
            cache_log \(folder)/squid.log
            pid_filename \(folder)/squid.pid
            coredump_dir \(folder)
            shutdown_lifetime 0 seconds
            """
        try? Data((config + "\n").utf8).write(to: URL(fileURLWithPath: folder + "/squid-cache.conf"))
        return ["-N", "-f", folder + "/squid-cache.conf"]
    }

    private static func prepareSquid(folder: String) throws {
        _ = squidArguments(port: 3128, folder: folder)
        try FileManager.default.createDirectory(atPath: folder + "/squid-cache", withIntermediateDirectories: true)
        chmod(folder, 0o777)
        chmod(folder + "/squid-cache", 0o777)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/squid")
        process.arguments = ["-N", "-z", "-f", folder + "/squid-cache.conf"]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
    }

    /// The response head of a GET of `url` through the proxy on `port` (curl).
    private static func head(_ url: String, through port: Int?) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        process.arguments =
            ["-sS", "-o", "/dev/null", "-D", "-"] + (port.map { ["-x", "http://127.0.0.1:\($0)"] } ?? []) + [url]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return text.replacingOccurrences(of: "\r\n", with: "\n")
    }

    static func printTable(
        _ run: (results: [ProxyBenchmark.Case: [String: ProxyBenchmark.Measurement]], names: [String])
    ) {
        let names = run.names
        print("| body | connections | " + names.map { "\($0) requests/s | \($0) p50" }.joined(separator: " | ") + " |")
        print("|---|---:|" + names.map { _ in "---:|---:" }.joined(separator: "|") + "|")
        let order = run.results.keys.sorted { ($0.file, $0.connections) < ($1.file, $1.connections) }
        var ratios: [String] = []
        for item in order.reversed() {
            let row = names.map { name -> String in
                guard let measurement = run.results[item]?[name] else { return "– | –" }
                return String(format: "%.0f | %.0f µs", measurement.requestsPerSecond, measurement.p50Microseconds)
            }
            print("| \(item.label) | \(item.connections) | " + row.joined(separator: " | ") + " |")
            if let ours = run.results[item]?["audit proxy"], let squid = run.results[item]?["Squid"] {
                ratios.append(
                    String(
                        format: "%@ ×%d: %.2f× Squid's hit requests/s, p50 %.2f× Squid's", item.label,
                        item.connections, ours.requestsPerSecond / squid.requestsPerSecond,
                        ours.p50Microseconds / squid.p50Microseconds))
            }
        }
        print(
            "\naudit proxy's cache hits against Squid's (target ≥ 1× requests/s, p50 ≤ 1×): "
                + ratios.joined(separator: "; "))
    }
}

/// In an app: the p50 of a request a cache rule answers from the cache, against the same request
/// straight to a local nginx (no RequestAudit), alternated rounds.
struct InAppCacheBenchmark {
    static let requests = 2_000
    static let rounds = 5

    func run() async throws -> (hit: Double, direct: Double) {
        let nginx = try LocalNginx()
        defer { nginx.stop() }
        let folder = NSTemporaryDirectory() + "audit-bench-app-cache-\(getpid())"
        try? FileManager.default.removeItem(atPath: folder)
        var configuration = AuditorConfiguration()
        configuration.cacheDirectory = folder
        let auditor = try Auditor(
            policy: Policy(parsing: "[cache] ttl=1h\nall ^http://127\\.0\\.0\\.1:[0-9]+/\n", file: "cache.rules"),
            configuration: configuration)
        let audited = URLSessionConfiguration.ephemeral
        try auditor.install(into: audited)
        let cached = URLSession(configuration: audited)
        let direct = URLSession(configuration: .ephemeral)
        _ = try await cached.data(from: nginx.url)
        var hits: [Double] = []
        var straight: [Double] = []
        for _ in 0..<Self.rounds {
            hits.append(try await Self.p50(cached, nginx.url))
            straight.append(try await Self.p50(direct, nginx.url))
        }
        try await auditor.shutdown()
        try? FileManager.default.removeItem(atPath: folder)
        return (median(hits), median(straight))
    }

    private static func p50(_ session: URLSession, _ url: URL) async throws -> Double {
        var times: [Double] = []
        times.reserveCapacity(requests)
        for _ in 0..<requests {
            let start = ContinuousClock.now
            _ = try await session.data(from: url)
            let elapsed = ContinuousClock.now - start
            times.append(Double(elapsed.components.attoseconds) / 1e12 + Double(elapsed.components.seconds) * 1e6)
        }
        return median(times)
    }
}
