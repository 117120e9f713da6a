import Foundation
import RequestAudit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Runs this benchmark binary again with `arguments` and returns its last stdout line (a fresh
/// process, so peak RSS is the measured work's own).
func runSelf(_ arguments: [String]) throws -> String {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { throw BenchError("audit-bench \(arguments) failed") }
    return String(decoding: data, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? ""
}

/// Policy load: seconds and peak RSS of loading a rule set in a fresh process.
struct LoadResult {
    let name: String
    let rules: Int
    let seconds: Double
    let peakBytes: Int
}

/// Interception overhead against a local nginx: direct session against audited session.
struct InterceptionResult {
    let label: String
    let p50: UInt64
    let p99: UInt64
    let requestsPerSecond: Double
}

/// A local nginx serving one small file, stopped on `stop()`.
final class LocalNginx {
    let port: Int
    let directory: String
    private let process: Process

    init() throws {
        directory = NSTemporaryDirectory() + "audit-bench-nginx-\(getpid())"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory + "/www", withIntermediateDirectories: true)
        try Data(repeating: UInt8(ascii: "x"), count: 1_024).write(
            to: URL(fileURLWithPath: directory + "/www/small.txt"))
        port = 20_000 + Int(getpid() % 20_000)
        let config = """
            daemon off; worker_processes 1; pid \(directory)/nginx.pid; error_log \(directory)/error.log;
            events { worker_connections 1024; }
            http { access_log off; keepalive_requests 100000;
              server { listen 127.0.0.1:\(port); root \(directory)/www; } }
            """
        try Data(config.utf8).write(to: URL(fileURLWithPath: directory + "/nginx.conf"))
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-c", directory + "/nginx.conf", "-p", directory]
        try process.run()
        Thread.sleep(forTimeInterval: 0.5)
        guard process.isRunning else { throw BenchError("nginx did not start (see \(directory)/error.log)") }
    }

    var url: URL { URL(string: "http://127.0.0.1:\(port)/small.txt")! }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}

struct InterceptionBenchmark {
    let policy: Policy
    let requests: Int

    func run() async throws -> [InterceptionResult] {
        let nginx = try LocalNginx()
        defer { nginx.stop() }
        let direct = URLSession(configuration: .ephemeral)
        var configuration = AuditorConfiguration()
        configuration.logPath = nginx.directory + "/audit.jsonl"
        let auditor = try Auditor(policy: policy, configuration: configuration)
        let auditedConfiguration = URLSessionConfiguration.ephemeral
        try auditor.install(into: auditedConfiguration)
        let audited = URLSession(configuration: auditedConfiguration)
        // Warm up both, then alternate rounds so drift hits both alike.
        _ = try await measure(direct, url: nginx.url, count: 200, concurrency: 1)
        _ = try await measure(audited, url: nginx.url, count: 200, concurrency: 1)
        var results: [String: [InterceptionResult]] = [:]
        for _ in 0..<3 {
            for (label, session) in [("direct", direct), ("audited", audited)] {
                for concurrency in [1, 16] {
                    let result = try await measure(session, url: nginx.url, count: requests, concurrency: concurrency)
                    results["\(label) ×\(concurrency)", default: []].append(
                        InterceptionResult(
                            label: "\(label) ×\(concurrency)", p50: result.p50, p99: result.p99,
                            requestsPerSecond: result.perSecond))
                }
            }
        }
        try await auditor.shutdown()
        // The median round by requests/s for each configuration.
        return ["direct ×1", "audited ×1", "direct ×16", "audited ×16"].compactMap { label in
            results[label]?.sorted { $0.requestsPerSecond < $1.requestsPerSecond }[1]
        }
    }

    private func measure(_ session: URLSession, url: URL, count: Int, concurrency: Int) async throws -> (
        p50: UInt64, p99: UInt64, perSecond: Double
    ) {
        let start = now()
        let latencies = try await withThrowingTaskGroup(of: [UInt64].self) { group in
            for _ in 0..<concurrency {
                group.addTask {
                    var latencies: [UInt64] = []
                    for _ in 0..<(count / concurrency) {
                        let begin = now()
                        let (data, _) = try await session.data(from: url)
                        guard data.count == 1_024 else { throw BenchError("short response from nginx") }
                        latencies.append(now() - begin)
                    }
                    return latencies
                }
            }
            var all: [UInt64] = []
            for try await part in group { all += part }
            return all.sorted()
        }
        let seconds = Double(now() - start) / 1e9
        return (percentile(latencies, 0.5), percentile(latencies, 0.99), Double(latencies.count) / seconds)
    }
}

/// Writes a synthetic audit log of `count` records in the log's own format (varied hosts,
/// verdicts, rules, statuses; one record every 10 ms).
func writeSyntheticLog(count: Int, to path: String) throws {
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    guard let handle = FileHandle(forWritingAtPath: path) else { throw BenchError("cannot write \(path)") }
    defer { try? handle.close() }
    var buffer = Data()
    let start = Date(timeIntervalSince1970: 1_795_000_000)
    let formatter = ISO8601DateFormatter()
    formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
    for number in 0..<count {
        let host = "host\(number % 5_000).example"
        let url = "https://\(host)/p/\(number % 977)?q=\(number)"
        let time = formatter.string(from: start.addingTimeInterval(Double(number) / 100))
        let decision: String
        let outcome: String
        switch number % 8 {
        case 3:
            decision =
                #""category":"bench","errors":[],"message":"Blocked","nanoseconds":\#(700 + number % 900),"recorded":[],"recordedCategories":[],"rule":"bench/r\#(number % 300)","verdict":"block""#
            outcome = #""durationMilliseconds":0,"kind":"blocked","redirects":[]"#
        default:
            decision =
                #""errors":[],"nanoseconds":\#(700 + number % 900),"recorded":["statistics/s\#(number % 40)"],"recordedCategories":["statistics"],"verdict":"pass""#
            outcome =
                #""bytes":\#(number % 20_000),"durationMilliseconds":\#(Double(number % 1_500) / 10),"forwardedURL":"\#(url)","kind":"response","redirects":[],"status":\#(number % 50 == 0 ? 404 : 200)"#
        }
        let line =
            #"{"decision":{\#(decision)},"id":"\#(UUID().uuidString)","outcome":{\#(outcome)},"request":{"bodyBytes":0,"headers":[],"host":"\#(host)","method":"GET","url":"\#(url)"},"schema":1,"time":"\#(time)"}"#
            + "\n"
        buffer.append(Data(line.utf8))
        if buffer.count > 1 << 20 {
            handle.write(buffer)
            buffer.removeAll(keepingCapacity: true)
        }
    }
    handle.write(buffer)
}
