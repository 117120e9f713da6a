import Foundation
import NIOCore
import RequestAudit

#if canImport(Glibc)
    import Glibc
#endif

/// HTTPS through intercepting proxies: `audit proxy --intercept-tls=all` (rules-10k, log on) beside
/// mitmproxy and Squid with ssl-bump, all terminating the client's TLS and verifying the same local
/// nginx (its certificate from a test CA): requests/s at 32 connections over keep-alive tunnels, p50
/// at 1 connection, medians of alternated runs; then, for audit proxy alone, the handshake of a first
/// tunnel to a new host (a leaf minted) against one to a host seen before, and its peak RSS after
/// 10,000 distinct hosts.
struct TLSProxyBenchmark {
    static let seconds = 3
    static let rounds = 5
    static let distinctHosts = 10_000

    struct Measurement {
        let requestsPerSecond: Double
        let p50Microseconds: Double
    }

    struct Result {
        /// By contender, at 1 and 32 connections.
        var single: [String: Measurement] = [:]
        var many: [String: Measurement] = [:]
        var contenders: [String] = []
        var newHostMicroseconds = 0.0
        var knownHostMicroseconds = 0.0
        var peakBytes = 0
    }

    let auditBinary: String
    let policySource: PolicySource
    let repository: String

    func run() async throws -> Result {
        let folder = NSTemporaryDirectory() + "audit-bench-tls-\(getpid())"
        try? FileManager.default.removeItem(atPath: folder)
        try FileManager.default.createDirectory(atPath: folder + "/policies", withIntermediateDirectories: true)
        chmod(folder, 0o777)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Data(policySource.bytes).write(to: URL(fileURLWithPath: folder + "/policies/bench.rules"))
        try shell(repository + "/Tests/Servers/make-test-certificates.sh", [folder + "/tls"])
        let nginx = try startNginx(folder: folder)
        defer { nginx.process.terminate() }

        var contenders: [(name: String, port: Int, process: Process, ca: String)] = []
        defer { for contender in contenders { contender.process.killAndWait() } }
        let auditPort = try freePort()
        contenders.append(
            (
                "audit proxy", auditPort,
                try launch(
                    auditBinary,
                    [
                        "proxy", "--listen", "127.0.0.1:\(auditPort)", "--policies", folder + "/policies", "--log",
                        folder + "/audit.jsonl", "--intercept-tls=all", "--ca-dir", folder + "/audit-ca",
                        "--upstream-ca", folder + "/tls/testca.pem",
                    ], port: auditPort),
                folder + "/audit-ca/ca.pem"
            ))
        // Debian's, pip's, or the virtual environment `make test-deps` makes.
        if let mitmdump = ["/usr/bin/mitmdump", "/usr/local/bin/mitmdump", "/opt/request-audit/mitmproxy/bin/mitmdump"]
            .first(where: {
                FileManager.default.isExecutableFile(atPath: $0)
            })
        {
            let port = try freePort()
            contenders.append(
                (
                    "mitmproxy", port,
                    try launch(
                        mitmdump,
                        [
                            "--listen-host", "127.0.0.1", "--listen-port", String(port), "--set",
                            "confdir=\(folder)/mitm", "--set",
                            "ssl_verify_upstream_trusted_ca=\(folder)/tls/testca.pem",
                            "--flow-detail", "0", "-q",
                        ], port: port),
                    folder + "/mitm/mitmproxy-ca-cert.pem"
                ))
        }
        if let squid = try startSquid(folder: folder) { contenders.append(squid) }

        let client = try TLSLoadClient(
            threads: 1, caFiles: [folder + "/tls/testca.pem"] + contenders.map(\.ca))
        defer { client.shutdown() }
        var result = Result(contenders: ["direct"] + contenders.map(\.name))
        let targets: [(String, Int?)] = [("direct", nil)] + contenders.map { ($0.name, $0.port) }
        var samples: [Int: [String: [Measurement]]] = [:]
        for connections in [1, 32] {
            for _ in 0..<Self.rounds {
                for (name, port) in targets {
                    let measurement: Measurement
                    do {
                        measurement = try await load(
                            client, proxyPort: port, nginxPort: nginx.port, connections: connections)
                    } catch {
                        throw BenchError("\(name), \(connections) connections: \(error)")
                    }
                    samples[connections, default: [:]][name, default: []].append(measurement)
                }
            }
            print("  tls proxies: ×\(connections) done", to: &standardError)
        }
        for (connections, byName) in samples {
            for (name, runs) in byName {
                let measurement = Measurement(
                    requestsPerSecond: median(runs.map(\.requestsPerSecond)),
                    p50Microseconds: median(runs.map(\.p50Microseconds)))
                if connections == 1 { result.single[name] = measurement } else { result.many[name] = measurement }
            }
        }
        // A new host's first tunnel against a known host's, alternated; then many distinct hosts.
        var newHost: [Double] = []
        var knownHost: [Double] = []
        for index in 0..<300 {
            for isNew in [true, false] {
                let host = isNew ? "h\(index).new.bench.test" : "known.bench.test"
                let (channel, elapsed) = try await client.open(
                    proxyPort: auditPort, host: host, port: 443, serverName: host)
                try await channel.close()
                let microseconds =
                    Double(elapsed.components.attoseconds) / 1e12 + Double(elapsed.components.seconds) * 1e6
                if isNew { newHost.append(microseconds) } else { knownHost.append(microseconds) }
            }
        }
        result.newHostMicroseconds = median(newHost)
        result.knownHostMicroseconds = median(knownHost)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for index in stride(from: worker, to: Self.distinctHosts, by: 8) {
                        let host = "d\(index).many.bench.test"
                        let (channel, _) = try await client.open(
                            proxyPort: auditPort, host: host, port: 443, serverName: host)
                        try await channel.close()
                    }
                }
            }
            try await group.waitForAll()
        }
        result.peakBytes = peakResidentBytes(of: contenders[0].process.processIdentifier)
        return result
    }

    /// One run of `connections` keep-alive tunnels (or direct connections) for ``seconds``.
    private func load(_ client: TLSLoadClient, proxyPort: Int?, nginxPort: Int, connections: Int) async throws
        -> Measurement
    {
        var channels: [Channel] = []
        for _ in 0..<connections {
            channels.append(
                try await client.open(proxyPort: proxyPort, host: "localhost", port: nginxPort, serverName: "localhost")
                    .0)
        }
        let deadline = NIODeadline.now() + .seconds(Int64(Self.seconds))
        let started = ContinuousClock.now
        let latencies = try await withThrowingTaskGroup(of: [UInt64].self) { group in
            for channel in channels {
                group.addTask {
                    try await client.loop(
                        on: channel, host: "localhost:\(nginxPort)", path: "/small.txt", until: deadline)
                }
            }
            var all: [UInt64] = []
            for try await some in group { all += some }
            return all
        }
        let elapsed = ContinuousClock.now - started
        for channel in channels { try? await channel.close() }
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        let sorted = latencies.sorted()
        return Measurement(
            requestsPerSecond: Double(latencies.count) / seconds,
            p50Microseconds: sorted.isEmpty ? 0 : Double(sorted[sorted.count / 2]) / 1_000)
    }

    private func startNginx(folder: String) throws -> (process: Process, port: Int) {
        let port = try freePort()
        try FileManager.default.createDirectory(atPath: folder + "/www", withIntermediateDirectories: true)
        try Data(repeating: UInt8(ascii: "x"), count: 1_024).write(to: URL(fileURLWithPath: folder + "/www/small.txt"))
        let config = """
            daemon off; worker_processes 1; pid \(folder)/nginx.pid; error_log \(folder)/nginx-error.log;
            events { worker_connections 4096; }
            http { access_log off; keepalive_requests 1000000; keepalive_timeout 300s;
              server { listen 127.0.0.1:\(port) ssl; listen [::1]:\(port) ssl; root \(folder)/www;
                ssl_certificate \(folder)/tls/localhost.pem; ssl_certificate_key \(folder)/tls/localhost-key.pem; } }
            """
        try Data(config.utf8).write(to: URL(fileURLWithPath: folder + "/nginx.conf"))
        return (try launch("/usr/sbin/nginx", ["-c", folder + "/nginx.conf", "-p", folder], port: port), port)
    }

    /// Squid with ssl-bump (Debian's squid-openssl), bumping every tunnel with a CA of its own and
    /// logging each request as it does by default; nil when the installed Squid has no TLS support.
    private func startSquid(folder: String) throws -> (name: String, port: Int, process: Process, ca: String)? {
        let helper = "/usr/lib/squid/security_file_certgen"
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/squid"),
            FileManager.default.isExecutableFile(atPath: helper)
        else { return nil }
        try shell(
            "/usr/bin/openssl",
            [
                "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                "-subj", "/CN=squid bench CA", "-keyout", folder + "/squid-ca-key.pem", "-out",
                folder + "/squid-ca.pem",
            ])
        try shell(helper, ["-c", "-s", folder + "/ssl_db", "-M", "16MB"])
        try? shell("/bin/chown", ["-R", "proxy:proxy", folder + "/ssl_db"])
        chmod(folder + "/squid-ca-key.pem", 0o644)
        let port = try freePort()
        let config = """
            http_port 127.0.0.1:\(port) ssl-bump generate-host-certificates=on dynamic_cert_mem_cache_size=16MB \
            tls-cert=\(folder)/squid-ca.pem tls-key=\(folder)/squid-ca-key.pem
            sslcrtd_program \(helper) -s \(folder)/ssl_db -M 16MB
            sslcrtd_children 4
            acl step1 at_step SslBump1
            ssl_bump peek step1
            ssl_bump bump all
            tls_outgoing_options cafile=\(folder)/tls/testca.pem
            http_access allow all
            cache deny all
            access_log daemon:\(folder)/squid-tls-access.log squid
            cache_log \(folder)/squid.log
            pid_filename \(folder)/squid-tls.pid
            shutdown_lifetime 0 seconds
            """
        try Data((config + "\n").utf8).write(to: URL(fileURLWithPath: folder + "/squid-tls.conf"))
        return (
            "Squid ssl-bump", port,
            try launch("/usr/sbin/squid", ["-N", "-f", folder + "/squid-tls.conf"], port: port),
            folder + "/squid-ca.pem"
        )
    }

    /// Starts a program and waits until it accepts connections on `port`.
    private func launch(_ binary: String, _ arguments: [String], port: Int) throws -> Process {
        let process = try started(binary, arguments)
        for _ in 0..<200 {
            if canConnect(port: port) { return process }
            Thread.sleep(forTimeInterval: 0.05)
        }
        process.terminate()
        throw BenchError("\(binary) did not start listening on \(port)")
    }

    /// Runs a program to its end; throws unless it exits 0.
    private func shell(_ binary: String, _ arguments: [String]) throws {
        let process = try started(binary, arguments)
        process.waitUntilExit()
        guard process.terminationStatus == 0 else { throw BenchError("\(binary) \(arguments) failed") }
    }

    /// `binary` started with `arguments`, its output discarded.
    private func started(_ binary: String, _ arguments: [String]) throws -> Process {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    static func printTable(_ result: Result) {
        print("| proxy | 1 connection requests/s | p50 | 32 connections requests/s | p50 |")
        print("|---|---:|---:|---:|---:|")
        for name in result.contenders {
            let one = result.single[name]
            let many = result.many[name]
            print(
                "| \(name) | "
                    + String(
                        format: "%.0f | %.0f µs | %.0f | %.0f µs |", one?.requestsPerSecond ?? 0,
                        one?.p50Microseconds ?? 0, many?.requestsPerSecond ?? 0, many?.p50Microseconds ?? 0))
        }
        let ours = result.many["audit proxy"]?.requestsPerSecond ?? 0
        let mitm = result.many["mitmproxy"]?.requestsPerSecond ?? 0
        let squid = result.many["Squid ssl-bump"]?.requestsPerSecond ?? 0
        let ourP50 = result.single["audit proxy"]?.p50Microseconds ?? 0
        let squidP50 = result.single["Squid ssl-bump"]?.p50Microseconds ?? 0
        print(
            "\naudit proxy --intercept-tls=all against the targets: 32 connections "
                + (mitm > 0
                    ? String(format: "%.2f× mitmproxy's requests/s (goal ≥ 5), ", ours / mitm)
                    : "mitmproxy not installed (goal ≥ 5× its requests/s), ")
                + String(format: "%.2f× Squid ssl-bump's (goal ≥ 1); ", squid > 0 ? ours / squid : 0)
                + String(
                    format: "p50 at 1 connection %.2f× Squid ssl-bump's (goal ≤ 1); ",
                    squidP50 > 0 ? ourP50 / squidP50 : 0)
                + String(
                    format: "a new host's tunnel and handshake %.0f µs p50 against %.0f µs for a known host "
                        + "(+%.2f ms; goal ≤ +2 ms); ", result.newHostMicroseconds, result.knownHostMicroseconds,
                    (result.newHostMicroseconds - result.knownHostMicroseconds) / 1_000)
                + "peak RSS after \(distinctHosts) distinct hosts \(result.peakBytes / 1_048_576) MB (goal ≤ 128 MB)")
    }
}
