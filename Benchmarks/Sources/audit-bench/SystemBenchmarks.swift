import Foundation
import RequestAudit

#if canImport(Glibc)
    import Glibc
#endif

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

/// Interception overhead against a local server: direct session against audited session.
struct InterceptionResult {
    let label: String
    let p50: UInt64
    let p99: UInt64
    let requestsPerSecond: Double
    /// The process's CPU time (user + system) while this session's requests ran, per request.
    let cpuNanosecondsPerRequest: Double
}

/// The CPU time (user + system) this process has used so far, in nanoseconds.
func processCPUNanoseconds() -> UInt64 {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    func nanoseconds(_ time: timeval) -> UInt64 { UInt64(time.tv_sec) * 1_000_000_000 + UInt64(time.tv_usec) * 1_000 }
    return nanoseconds(usage.ru_utime) + nanoseconds(usage.ru_stime)
}

/// `latency-server` (built beside this binary) in a process of its own, answering each request with 1 KiB after
/// `delay`; stopped on `stop()`.
final class LatencyServer {
    let url: URL
    private let process: Process

    init(delay: Duration) throws {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("latency-server")
        let process = Process()
        process.executableURL = binary
        process.arguments = [
            String(delay.components.seconds * 1_000_000 + delay.components.attoseconds / 1_000_000_000_000)
        ]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var line = Data()
        while let byte = try output.fileHandleForReading.read(upToCount: 1), !byte.isEmpty, byte != Data([0x0A]) {
            line.append(byte)
        }
        guard let port = Int(String(decoding: line, as: UTF8.self)), port > 0,
            let url = URL(string: "http://127.0.0.1:\(port)/small.txt")
        else {
            kill(process.processIdentifier, SIGKILL)
            throw BenchError(
                "latency-server did not print its port (is it built? `swift build -c release` in Benchmarks)")
        }
        (self.url, self.process) = (url, process)
    }

    /// Kills the server (``Foundation/Process/killAndWait()``).
    func stop() {
        process.killAndWait()
    }
}

extension Process {
    /// Kills the process and waits for it: a process started from a dispatch thread inherits its
    /// blocked signals, so `terminate()` (SIGTERM) may not reach it (Squid once outlived every run).
    func killAndWait() {
        guard isRunning else { return }
        kill(processIdentifier, SIGKILL)
        waitUntilExit()
    }
}

/// A local nginx serving one small file (and any added with `addFile`), stopped on `stop()`.
final class LocalNginx {
    let port: Int
    let directory: String
    /// The small file's address.
    let url: URL
    private let process: Process

    /// Starts nginx on the first of a few ports that are free: ports below the kernel's
    /// ephemeral range (32768 and up by default), where a connection left over from an earlier run
    /// may still hold a port, each checked by binding it first, and nginx counted as started only
    /// once it accepts a connection (it retries a taken port for a few seconds before giving up).
    init() throws {
        directory = NSTemporaryDirectory() + "audit-bench-nginx-\(getpid())"
        try? FileManager.default.removeItem(atPath: directory)
        try FileManager.default.createDirectory(atPath: directory + "/www", withIntermediateDirectories: true)
        try Data(repeating: UInt8(ascii: "x"), count: 1_024).write(
            to: URL(fileURLWithPath: directory + "/www/small.txt"))
        let first = 20_000 + Int(getpid() % 10_000)
        for attempt in 0..<5 {
            let port = 20_000 + (first - 20_000 + attempt * 1_009) % 12_000
            guard let url = URL(string: "http://127.0.0.1:\(port)/small.txt") else {
                throw BenchError("no URL for port \(port)")
            }
            guard Self.canBind(port: port) else { continue }
            let process = try Self.start(port: port, directory: directory)
            if Self.waitUntilAccepting(port: port, process: process) {
                (self.port, self.url, self.process) = (port, url, process)
                return
            }
            if process.isRunning { process.terminate() }
            process.waitUntilExit()
        }
        throw BenchError("nginx could not listen on any of five ports (see \(directory)/error.log)")
    }

    private static func start(port: Int, directory: String) throws -> Process {
        let config = """
            daemon off; worker_processes 1; pid \(directory)/nginx.pid; error_log \(directory)/error.log;
            events { worker_connections 1024; }
            http { access_log off; keepalive_requests 100000;
              server { listen 127.0.0.1:\(port); root \(directory)/www; } }
            """
        try Data(config.utf8).write(to: URL(fileURLWithPath: directory + "/nginx.conf"))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-c", directory + "/nginx.conf", "-p", directory]
        try process.run()
        return process
    }

    /// Whether nginx accepts a TCP connection on `port` within five seconds, while it runs.
    private static func waitUntilAccepting(port: Int, process: Process) -> Bool {
        for _ in 0..<100 {
            guard process.isRunning else { return false }
            if canConnect(port: port) { return true }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return false
    }

    private static func canConnect(port: Int) -> Bool {
        withSocket(port: port) { socket, address, length in connect(socket, address, length) == 0 }
    }

    /// Whether `port` can be bound as nginx binds it (with `SO_REUSEADDR`).
    private static func canBind(port: Int) -> Bool {
        withSocket(port: port) { socket, address, length in
            var yes: Int32 = 1
            setsockopt(socket, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
            return bind(socket, address, length) == 0
        }
    }

    /// Calls `body` with a new TCP socket and the address of `port` on 127.0.0.1; closes the socket.
    private static func withSocket(
        port: Int, _ body: (Int32, UnsafePointer<sockaddr>, socklen_t) -> Bool
    ) -> Bool {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard socket >= 0 else { return false }
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                body(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
    }

    /// Serves a file of `bytes` zero bytes as `name` (sparse on disk) and returns its address.
    func addFile(named name: String, bytes: Int) throws -> URL {
        let path = directory + "/www/" + name
        guard FileManager.default.createFile(atPath: path, contents: nil),
            let handle = FileHandle(forWritingAtPath: path)
        else { throw BenchError("cannot write \(path)") }
        try handle.truncate(atOffset: UInt64(bytes))
        try handle.close()
        guard let url = URL(string: "http://127.0.0.1:\(port)/\(name)") else { throw BenchError("no URL for \(name)") }
        return url
    }

    /// Stops nginx and removes its directory (its configuration, the file, and the audit log).
    func stop() {
        process.terminate()
        process.waitUntilExit()
        try? FileManager.default.removeItem(atPath: directory)
    }
}

struct InterceptionBenchmark {
    /// Requests per session at each concurrency. The ratios drift with the machine's minute even
    /// though the sessions alternate: at 3,200 the same binary's 16-at-a-time p50 overhead ranged
    /// from +6.3 % to +15.0 % over eight runs; at 12,800 it ranged from +7.9 % to +13.1 % over six
    /// (2026-11-23). The section then takes about 40 s.
    static let defaultRequests = 12_800

    let policy: Policy
    let requests: Int
    /// Only these sessions ("direct", "audited"), for profiling one path; nil measures both.
    var only: String? = nil
    /// The concurrencies measured, in order.
    var concurrencies = [1, 16]
    /// How long the server waits before it answers: nil for nginx answering at once (the layer alone), a duration
    /// for `latency-server` (what a user waiting on a server feels; the target is measured at 1 ms).
    var latency: Duration? = nil

    func run() async throws -> [InterceptionResult] {
        // nginx serves the 1 KiB file and keeps the audit log's folder either way.
        let nginx = try LocalNginx()
        defer { nginx.stop() }
        let server = try latency.map { try LatencyServer(delay: $0) }
        defer { server?.stop() }
        let url = server?.url ?? nginx.url
        let direct = URLSession(configuration: .ephemeral)
        var configuration = AuditorConfiguration()
        configuration.logPath = nginx.directory + "/audit.jsonl"
        let auditor = try Auditor(policy: policy, configuration: configuration)
        let auditedConfiguration = URLSessionConfiguration.ephemeral
        try auditor.install(into: auditedConfiguration)
        let audited = URLSession(configuration: auditedConfiguration)
        // Warm up both, then alternate short blocks of requests, so the machine's drift (its speed
        // varies by 2× within minutes) hits both sessions alike; each session's latencies and time
        // are pooled over its blocks.
        _ = try await measure(direct, url: url, count: 200, concurrency: 1)
        _ = try await measure(audited, url: url, count: 200, concurrency: 1)
        let sessions = [("direct", direct), ("audited", audited)].filter { only == nil || only == $0.0 }
        var results: [InterceptionResult] = []
        for concurrency in concurrencies {
            let block = 20 * concurrency
            var latencies: [String: [UInt64]] = [:]
            var seconds: [String: Double] = [:]
            var cpu: [String: UInt64] = [:]
            for _ in 0..<max(1, requests / block) {
                for (label, session) in sessions {
                    let cpuBefore = processCPUNanoseconds()
                    let result = try await measure(session, url: url, count: block, concurrency: concurrency)
                    cpu[label, default: 0] += processCPUNanoseconds() - cpuBefore
                    latencies[label, default: []] += result.latencies
                    seconds[label, default: 0] += result.seconds
                }
            }
            for (label, _) in sessions {
                let all = (latencies[label] ?? []).sorted()
                results.append(
                    InterceptionResult(
                        label: "\(label) ×\(concurrency)", p50: percentile(all, 0.5), p99: percentile(all, 0.99),
                        requestsPerSecond: Double(all.count) / (seconds[label] ?? 1),
                        cpuNanosecondsPerRequest: Double(cpu[label] ?? 0) / Double(max(1, all.count))))
            }
        }
        try await auditor.shutdown()
        return results
    }

    /// `count` GETs of `url` from `concurrency` workers: every latency, and the seconds it took.
    private func measure(_ session: URLSession, url: URL, count: Int, concurrency: Int) async throws -> (
        latencies: [UInt64], seconds: Double
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
            return all
        }
        return (latencies, Double(now() - start) / 1e9)
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
    // Sealed as the log writer seals every line, so that reading it checks sequence numbers too.
    var chain = LogChain()
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
            chain.seal(
                #"{"decision":{\#(decision)},"id":"\#(UUID().uuidString)","outcome":{\#(outcome)},"request":{"bodyBytes":0,"headers":[],"host":"\#(host)","method":"GET","url":"\#(url)"},"schema":1,"time":"\#(time)"}"#
            )
            + "\n"
        buffer.append(Data(line.utf8))
        if buffer.count > 1 << 20 {
            handle.write(buffer)
            buffer.removeAll(keepingCapacity: true)
        }
    }
    handle.write(buffer)
}
