import ArgumentParser
import Foundation
import RequestAudit

#if canImport(Glibc)
    import Glibc
#endif

/// `audit proxy` against Squid, Privoxy and tinyproxy (and no proxy at all), all forwarding wrk's
/// requests to the same local nginx: requests/s and p50 at 1 and 32 connections, for a 1 KiB and a
/// 10 MiB body, medians of alternated runs; and the peak RSS of `audit proxy`.
struct ProxyBenchmark {
    /// Seconds per wrk run.
    static let seconds = 3
    /// Alternated runs per proxy and case.
    static let rounds = 3

    struct Case: Hashable {
        let file: String
        let label: String
        let connections: Int
    }

    struct Measurement {
        let requestsPerSecond: Double
        let p50Microseconds: Double
    }

    /// A proxy program started for the benchmark.
    struct Contender {
        let name: String
        let port: Int?
        let process: Process?

        /// Kills the proxy (``Foundation/Process/killAndWait()``).
        func stop() {
            process?.killAndWait()
        }
    }

    let auditBinary: String
    let policySource: PolicySource

    func run() throws -> (results: [Case: [String: Measurement]], contenders: [String], auditPeakBytes: Int) {
        let nginx = try LocalNginx()
        defer { nginx.stop() }
        _ = try nginx.addFile(named: "body-10m.bin", bytes: 10 * 1_048_576)
        let folder = nginx.directory + "/proxies"
        try FileManager.default.createDirectory(atPath: folder + "/policies", withIntermediateDirectories: true)
        try Data(policySource.bytes).write(to: URL(fileURLWithPath: folder + "/policies/bench.rules"))
        var contenders = [Contender(name: "direct", port: nil, process: nil)]
        let audit = try Self.start(
            "audit proxy", auditBinary,
            { port in
                [
                    "proxy", "--listen", "127.0.0.1:\(port)", "--policies", folder + "/policies", "--log",
                    folder + "/audit.jsonl",
                ]
            }, folder: folder)
        contenders.append(audit)
        defer { for contender in contenders { contender.stop() } }
        for (name, binary, configure) in Self.others(folder: folder)
        where FileManager.default.isExecutableFile(atPath: binary) {
            contenders.append(try Self.start(name, binary, configure, folder: folder))
        }
        let cases = [
            Case(file: "/small.txt", label: "1 KiB", connections: 1),
            Case(file: "/small.txt", label: "1 KiB", connections: 32),
            Case(file: "/body-10m.bin", label: "10 MiB", connections: 1),
            Case(file: "/body-10m.bin", label: "10 MiB", connections: 32),
        ]
        let results = try Self.measure(
            cases, through: contenders, rounds: Self.rounds, nginxPort: nginx.port, folder: folder, label: "proxies")
        let peak = audit.process.map { peakResidentBytes(of: $0.processIdentifier) } ?? 0
        return (results, contenders.map(\.name), peak)
    }

    /// Each case through each contender, `rounds` times alternated: the medians of requests/s and
    /// of p50 per case and contender.
    static func measure(
        _ cases: [Case], through contenders: [Contender], rounds: Int, nginxPort: Int, folder: String, label: String
    ) throws -> [Case: [String: Measurement]] {
        var results: [Case: [String: Measurement]] = [:]
        for item in cases {
            var runs: [String: [Measurement]] = [:]
            for _ in 0..<rounds {
                for contender in contenders {
                    runs[contender.name, default: []].append(
                        try wrk(item, through: contender.port, nginxPort: nginxPort, folder: folder))
                }
            }
            for (name, measured) in runs {
                results[item, default: [:]][name] = Measurement(
                    requestsPerSecond: median(measured.map(\.requestsPerSecond)),
                    p50Microseconds: median(measured.map(\.p50Microseconds)))
            }
            print("  \(label): \(item.label) ×\(item.connections) done", to: &standardError)
        }
        return results
    }

    /// Squid, Privoxy and tinyproxy: their binaries and their arguments for a port, with a minimal
    /// configuration written under `folder` (no cache, no filtering; Squid logs each request as it does
    /// by default, as audit proxy keeps its audit log).
    static func others(folder: String) -> [(String, String, (Int) -> [String])] {
        [
            (
                "Squid", "/usr/sbin/squid",
                { port in
                    write(
                        """
                        http_port 127.0.0.1:\(port)
                        http_access allow all
                        cache deny all
                        access_log daemon:\(folder)/squid-access.log squid
                        cache_log \(folder)/squid.log
                        pid_filename \(folder)/squid.pid
                        coredump_dir \(folder)
                        shutdown_lifetime 0 seconds
                        """, to: folder + "/squid.conf")
                    return ["-N", "-f", folder + "/squid.conf"]
                }
            ),
            (
                "Privoxy", "/usr/sbin/privoxy",
                { port in
                    write(
                        """
                        confdir \(folder)
                        logdir \(folder)
                        listen-address 127.0.0.1:\(port)
                        toggle 0
                        keep-alive-timeout 300
                        max-client-connections 512
                        """, to: folder + "/privoxy.conf")
                    return ["--no-daemon", folder + "/privoxy.conf"]
                }
            ),
            (
                "tinyproxy", "/usr/bin/tinyproxy",
                { port in
                    write(
                        """
                        Port \(port)
                        Listen 127.0.0.1
                        Timeout 600
                        MaxClients 512
                        LogLevel Critical
                        PidFile "\(folder)/tinyproxy.pid"
                        """, to: folder + "/tinyproxy.conf")
                    return ["-d", "-c", folder + "/tinyproxy.conf"]
                }
            ),
        ]
    }

    private static func write(_ text: String, to path: String) {
        try? Data((text + "\n").utf8).write(to: URL(fileURLWithPath: path))
    }

    /// Starts a proxy on a free port and waits until it forwards a request.
    static func start(_ name: String, _ binary: String, _ arguments: (Int) -> [String], folder: String) throws
        -> Contender
    {
        // Squid and Privoxy run as unprivileged users when started by root: let them write here.
        chmod(folder, 0o777)
        let port = try freePort()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments(port)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        for _ in 0..<100 {
            if canConnect(port: port) { return Contender(name: name, port: port, process: process) }
            Thread.sleep(forTimeInterval: 0.1)
        }
        process.terminate()
        throw BenchError("\(name) did not start listening on \(port)")
    }

    /// One wrk run of `item` through the proxy on `port` (nil: straight to nginx).
    static func wrk(_ item: Case, through port: Int?, nginxPort: Int, folder: String) throws -> Measurement {
        let script = folder + "/wrk-\(port ?? 0)\(item.file.replacingOccurrences(of: "/", with: "-")).lua"
        let path = port == nil ? item.file : "http://127.0.0.1:\(nginxPort)\(item.file)"
        // Through a proxy, the Host header names the server, as a proxy client sends it (wrk would
        // send the proxy's own address, which audit proxy refuses as naming another server).
        let host = port == nil ? "" : "wrk.headers[\"Host\"] = \"127.0.0.1:\(nginxPort)\"\n"
        try Data("wrk.path = \"\(path)\"\n\(host)".utf8).write(to: URL(fileURLWithPath: script))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/wrk")
        process.arguments = [
            "-t", item.connections == 1 ? "1" : "2", "-c", String(item.connections), "-d", "\(Self.seconds)s",
            "--latency", "-s", script, "http://127.0.0.1:\(port ?? nginxPort)",
        ]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        var requestsPerSecond: Double?
        var p50: Double?
        for line in text.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            if fields.first == "Requests/sec:", fields.count > 1 { requestsPerSecond = Double(fields[1]) }
            if fields.first == "50%", fields.count > 1 { p50 = Self.microseconds(String(fields[1])) }
        }
        guard let requestsPerSecond, let p50 else { throw BenchError("wrk printed no result:\n\(text)") }
        if text.contains("Non-2xx") { throw BenchError("wrk saw errors through port \(port ?? nginxPort):\n\(text)") }
        return Measurement(requestsPerSecond: requestsPerSecond, p50Microseconds: p50)
    }

    /// wrk's latency text (`191.00us`, `1.34ms`, `2.01s`) in microseconds.
    static func microseconds(_ text: String) -> Double? {
        for (unit, scale) in [("us", 1.0), ("ms", 1_000.0), ("s", 1_000_000.0)] where text.hasSuffix(unit) {
            return Double(text.dropLast(unit.count)).map { $0 * scale }
        }
        return nil
    }

    static func printTable(
        _ run: (results: [Case: [String: Measurement]], contenders: [String], auditPeakBytes: Int), policyPeakBytes: Int
    ) {
        let names = run.contenders
        print("| body | connections | " + names.map { "\($0) requests/s | \($0) p50" }.joined(separator: " | ") + " |")
        print("|---|---:|" + names.map { _ in "---:|---:" }.joined(separator: "|") + "|")
        let order = run.results.keys.sorted { ($0.file, $0.connections) > ($1.file, $1.connections) ? false : true }
        for item in order {
            let row = names.map { name -> String in
                guard let measurement = run.results[item]?[name] else { return "– | –" }
                return String(format: "%.0f | %.0f µs", measurement.requestsPerSecond, measurement.p50Microseconds)
            }
            print("| \(item.label) | \(item.connections) | " + row.joined(separator: " | ") + " |")
        }
        let small32 = run.results[Case(file: "/small.txt", label: "1 KiB", connections: 32)] ?? [:]
        let small1 = run.results[Case(file: "/small.txt", label: "1 KiB", connections: 1)] ?? [:]
        let ours32 = small32["audit proxy"]?.requestsPerSecond ?? 0
        let squid32 = small32["Squid"]?.requestsPerSecond ?? 0
        let ours1 = small1["audit proxy"]?.p50Microseconds ?? 0
        let privoxy1 = small1["Privoxy"]?.p50Microseconds ?? 0
        print(
            "\naudit proxy (rules-10k, log on) against the targets: 1 KiB at 32 connections "
                + String(format: "%.2f× Squid's requests/s", squid32 > 0 ? ours32 / squid32 : 0)
                + "; 1 KiB p50 at 1 connection "
                + String(format: "%.2f× Privoxy's", privoxy1 > 0 ? ours1 / privoxy1 : 0)
                + "; peak RSS \(run.auditPeakBytes / 1_048_576) MB (the rules-10k policy alone: "
                + "\(policyPeakBytes / 1_048_576) MB; target ≤ 64 MB plus the policy)")
    }
}

/// A port nothing listens on now (the kernel's pick).
func freePort() throws -> Int {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(socket) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let port = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address -> Int in
            guard bind(socket, address, length) == 0, getsockname(socket, address, &length) == 0 else { return 0 }
            return Int(UInt16(bigEndian: pointer.pointee.sin_port))
        }
    }
    guard port > 0 else { throw BenchError("no free port") }
    return port
}

/// Whether something accepts a TCP connection on `port` of 127.0.0.1.
func canConnect(port: Int) -> Bool {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(socket) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    return withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
        }
    }
}

/// Peak resident set size of process `pid`, in bytes (VmHWM).
func peakResidentBytes(of pid: Int32) -> Int {
    guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else { return 0 }
    for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
        return (line.split(separator: " ").compactMap { Int($0) }.first ?? 0) * 1_024
    }
    return 0
}

/// Runs only the proxy benchmark (section 6 of `all`).
struct Proxies: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "proxies", shouldDisplay: false)
    @OptionGroup var options: DataOptions
    @Option(help: "The audit binary.") var audit = "../.build/release/audit"

    func run() throws {
        let source = try BenchData(directory: options.data).blockingPolicySource("rules-10k.txt")
        let fields = try runSelf(["load-one", "10k", "--data", options.data]).split(separator: " ")
        let policyPeak = fields.count == 3 ? Int(fields[2]) ?? 0 : 0
        ProxyBenchmark.printTable(
            try ProxyBenchmark(auditBinary: audit, policySource: source).run(), policyPeakBytes: policyPeak)
    }
}
