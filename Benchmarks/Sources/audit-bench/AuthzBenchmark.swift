import ArgumentParser
import AuditAuthzGRPC
import Foundation
import GRPCCore
import GRPCNIOTransportHTTP2
import RequestAudit

#if canImport(Glibc)
    import Glibc
#endif

/// `audit authz` behind a gateway: nginx reverse-proxying a 1 KiB file from a second nginx, with and
/// without `auth_request` to `audit authz` (rules-10k, log on), wrk at 32 connections, medians of
/// alternated runs; and Envoy's gRPC Check from a load client of its own, paced at a fixed rate by 1
/// and 32 callers, each call's round trip timed, beside the handler time `audit authz` records.
struct AuthzBenchmark {
    static let rounds = 3
    /// Checks per second the gRPC load client keeps to.
    static let rate = 5_000
    /// Seconds of each paced gRPC run.
    static let seconds = 3

    let auditBinary: String
    let policySource: PolicySource
    /// URLs the gRPC checks name, in turn.
    let urls: [String]

    struct GRPCRun {
        let callers: Int
        let achievedPerSecond: Double
        let p50Microseconds: Double
        let p99Microseconds: Double
        /// Admission to answer inside `audit authz`, from its records.
        let handlerP50Microseconds: Double
        let handlerP99Microseconds: Double
    }

    struct Result {
        let withoutAuthz: ProxyBenchmark.Measurement
        /// With `auth_request` to a server of the gateway's own that allows at once: the subrequest's
        /// cost alone.
        let withNullAuthz: ProxyBenchmark.Measurement
        /// With `auth_request` to another nginx process that allows at once: the most an authorizer
        /// over HTTP, a process of its own sharing the machine's cores, allows.
        let withNullProcess: ProxyBenchmark.Measurement
        let withAuthz: ProxyBenchmark.Measurement
        let grpc: [GRPCRun]
    }

    func run() async throws -> Result {
        let upstream = try LocalNginx()
        defer { upstream.stop() }
        let folder = upstream.directory + "/authz"
        try FileManager.default.createDirectory(atPath: folder + "/policies", withIntermediateDirectories: true)
        try Data(policySource.bytes).write(to: URL(fileURLWithPath: folder + "/policies/bench.rules"))
        let grpcPort = try freePort()
        let authz = try ProxyBenchmark.start(
            "audit authz", auditBinary,
            { port in
                [
                    "authz", "--listen", "127.0.0.1:\(port)", "--grpc-listen", "127.0.0.1:\(grpcPort)", "--policies",
                    folder + "/policies", "--log", folder + "/audit.jsonl",
                ]
            }, folder: folder)
        defer { authz.stop() }
        let (plainPort, nullPort, guardedPort) = (try freePort(), try freePort(), try freePort())
        let (nullProcessPort, allowPort) = (try freePort(), try freePort())
        let allow = try Self.startNginx(
            folder: folder, name: "allow",
            configuration: "server { listen 127.0.0.1:\(allowPort); location / { return 204; } }")
        let gateway = try Self.startNginx(
            folder: folder, name: "gateway",
            configuration: Self.gatewayServers(
                plain: plainPort, null: nullPort, nullProcess: nullProcessPort, allow: allowPort,
                guarded: guardedPort, upstream: upstream.port, authz: authz.port ?? 0))
        defer {
            // SIGTERM: the master stops its workers (which SIGKILL would leave running).
            for process in [gateway, allow] {
                process.terminate()
                process.waitUntilExit()
            }
        }
        let ports = [plainPort, nullPort, nullProcessPort, guardedPort]
        for port in ports + [allowPort] {
            for _ in 0..<100 where !canConnect(port: port) { try await Task.sleep(for: .milliseconds(100)) }
        }
        let item = ProxyBenchmark.Case(file: "/small.txt", label: "1 KiB", connections: 32)
        var runs: [Int: [ProxyBenchmark.Measurement]] = [:]
        for _ in 0..<Self.rounds {
            for port in ports {
                runs[port, default: []].append(
                    try ProxyBenchmark.wrk(item, through: nil, nginxPort: port, folder: folder))
            }
        }
        print("  authz: nginx auth_request done", to: &standardError)
        func medians(_ list: [ProxyBenchmark.Measurement]) -> ProxyBenchmark.Measurement {
            ProxyBenchmark.Measurement(
                requestsPerSecond: median(list.map(\.requestsPerSecond)),
                p50Microseconds: median(list.map(\.p50Microseconds)))
        }
        var grpc: [GRPCRun] = []
        for callers in [1, 32] {
            let (achieved, latencies) = try await Self.paced(port: grpcPort, callers: callers, urls: urls)
            try await Task.sleep(for: .milliseconds(500))  // the log's writer catches up
            let handler = try Self.handlerTimes(log: folder + "/audit.jsonl", last: latencies.count)
            grpc.append(
                GRPCRun(
                    callers: callers, achievedPerSecond: achieved, p50Microseconds: Self.quantile(latencies, 0.5),
                    p99Microseconds: Self.quantile(latencies, 0.99),
                    handlerP50Microseconds: Self.quantile(handler, 0.5),
                    handlerP99Microseconds: Self.quantile(handler, 0.99)))
            print("  authz: gRPC ×\(callers) done", to: &standardError)
        }
        return Result(
            withoutAuthz: medians(runs[plainPort] ?? []), withNullAuthz: medians(runs[nullPort] ?? []),
            withNullProcess: medians(runs[nullProcessPort] ?? []), withAuthz: medians(runs[guardedPort] ?? []),
            grpc: grpc)
    }

    /// The front nginx's servers: one proxying to the upstream; one doing the same after
    /// `auth_request` to a server of its own that allows at once (an authorizer that does no work:
    /// the subrequest's own cost, on the port after `null`); one after `auth_request` to the nginx
    /// process on `allow`, which allows at once; and one after `auth_request` to audit authz (the
    /// recipe of docs/authz.md); all with kept-alive upstream connections.
    private static func gatewayServers(
        plain: Int, null: Int, nullProcess: Int, allow: Int, guarded: Int, upstream: Int, authz: Int
    ) -> String {
        """
          upstream origin { server 127.0.0.1:\(upstream); keepalive 64; }
          upstream authz { server 127.0.0.1:\(authz); keepalive 64; }
          proxy_http_version 1.1;
          server { listen 127.0.0.1:\(plain);
            location / { proxy_set_header Connection ""; proxy_pass http://origin; } }
          server { listen 127.0.0.1:\(null + 1); location / { return 204; } }
        \(allowingServer(listen: null, name: "allow", authorizer: null + 1))
        \(allowingServer(listen: nullProcess, name: "allowProcess", authorizer: allow))
          server { listen 127.0.0.1:\(guarded);
            location / {
              auth_request /_audit;
              auth_request_set $audit_verdict $upstream_http_x_request_audit_verdict;
              proxy_set_header X-Request-Audit-Verdict $audit_verdict;
              proxy_set_header Connection "";
              proxy_pass http://origin;
            }
            location = /_audit {
              internal;
              proxy_pass http://authz;
              proxy_pass_request_body off;
              proxy_set_header Content-Length "";
              proxy_set_header Connection "";
              proxy_set_header X-Original-URI $request_uri;
              proxy_set_header X-Original-Method $request_method;
              proxy_set_header X-Forwarded-Proto $scheme;
              proxy_set_header X-Forwarded-Host $host;
            }
          }
        """
    }

    /// A gateway server on `listen` that proxies to the upstream after `auth_request` to the server on
    /// `authorizer` (upstream `name`, kept alive), which allows at once.
    private static func allowingServer(listen: Int, name: String, authorizer: Int) -> String {
        """
          upstream \(name) { server 127.0.0.1:\(authorizer); keepalive 64; }
          server { listen 127.0.0.1:\(listen);
            location / { auth_request /_allow; proxy_set_header Connection ""; proxy_pass http://origin; }
            location = /_allow {
              internal; proxy_pass http://\(name); proxy_pass_request_body off; proxy_set_header Content-Length "";
              proxy_set_header Connection "";
            } }
        """
    }

    /// Starts an nginx of one worker named `name` in `folder`, serving `configuration`'s `http` block.
    private static func startNginx(folder: String, name: String, configuration: String) throws -> Process {
        let config = """
            daemon off; worker_processes 1; pid \(folder)/\(name).pid; error_log \(folder)/\(name)-error.log;
            events { worker_connections 4096; }
            http {
              access_log off; keepalive_requests 100000;
            \(configuration)
            }
            """
        try Data(config.utf8).write(to: URL(fileURLWithPath: folder + "/\(name).conf"))
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-c", folder + "/\(name).conf", "-p", folder]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        return process
    }

    /// `callers` tasks each sending checks at `rate / callers` a second for `seconds` (a call that
    /// comes back late is followed at once): checks a second achieved, and each call's round trip in
    /// microseconds.
    private static func paced(port: Int, callers: Int, urls: [String]) async throws -> (Double, [Double]) {
        let requests = urls.prefix(4_096).map(Self.checkRequest)
        return try await withGRPCClient(
            transport: .http2NIOPosix(
                target: .ipv4(address: "127.0.0.1", port: port), transportSecurity: .plaintext,
                config: .defaults { $0.connection.flushCoalescing = nil })
        ) { client in
            let authorization = Envoy_Service_Auth_V3_Authorization.Client(wrapping: client)
            // Warm up: connection, and the first decisions.
            for request in requests.prefix(200) { _ = try await authorization.check(request) }
            let interval = Duration.nanoseconds(1_000_000_000 * callers / rate)
            let clock = ContinuousClock()
            let start = clock.now
            let end = start + .seconds(seconds)
            let latencies = try await withThrowingTaskGroup(of: [Double].self) { group in
                for caller in 0..<callers {
                    group.addTask {
                        var times: [Double] = []
                        var next = start + interval * caller / callers
                        var index = caller
                        while next < end {
                            try await clock.sleep(until: next)
                            let sent = clock.now
                            _ = try await authorization.check(requests[index % requests.count])
                            times.append(Double((clock.now - sent).components.attoseconds) / 1e12)
                            index += callers
                            next += interval
                        }
                        return times
                    }
                }
                var all: [Double] = []
                for try await times in group { all += times }
                return all
            }
            let elapsed = clock.now - start
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            return (Double(latencies.count) / seconds, latencies)
        }
    }

    /// A CheckRequest for `url` as Envoy fills one: method, scheme, host, path, a few headers, an id.
    private static func checkRequest(_ url: String) -> Envoy_Service_Auth_V3_CheckRequest {
        var request = Envoy_Service_Auth_V3_CheckRequest()
        let components = URLComponents(string: url)
        var http = Envoy_Service_Auth_V3_AttributeContext.HttpRequest()
        http.method = "GET"
        http.scheme = components?.scheme ?? "https"
        http.host = components?.percentEncodedHost ?? "example.com"
        let query = components?.percentEncodedQuery.map { "?" + $0 } ?? ""
        http.path =
            (components?.percentEncodedPath.isEmpty == false ? components?.percentEncodedPath ?? "/" : "/") + query
        http.id = UUID().uuidString
        http.protocol = "HTTP/1.1"
        http.size = -1
        http.headers = [
            ":authority": http.host, ":method": "GET", ":path": http.path, ":scheme": http.scheme,
            "user-agent": "Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0", "accept": "*/*",
            "accept-encoding": "gzip, br", "x-forwarded-proto": http.scheme, "x-request-id": http.id,
        ]
        request.attributes.request.http = http
        return request
    }

    /// The outcome durations of the last `count` records of `log` (fewer if it rotated meanwhile), in
    /// microseconds.
    private static func handlerTimes(log: String, last count: Int) throws -> [Double] {
        let data = try Data(contentsOf: URL(fileURLWithPath: log))
        return data.split(separator: UInt8(ascii: "\n")).suffix(count).compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line)) as? [String: Any],
                let outcome = object["outcome"] as? [String: Any],
                let milliseconds = outcome["durationMilliseconds"] as? Double
            else { return nil }
            return milliseconds * 1_000
        }
    }

    private static func quantile(_ values: [Double], _ fraction: Double) -> Double {
        guard !values.isEmpty else { return .nan }
        let sorted = values.sorted()
        return sorted[min(sorted.count - 1, Int(Double(sorted.count) * fraction))]
    }

    static func printTable(_ result: Result) {
        print("| nginx → nginx, 1 KiB, 32 connections | requests/s | p50 |")
        print("|---|---:|---:|")
        for (name, measured) in [
            ("without authorization", result.withoutAuthz),
            ("with auth_request to a server of the gateway's that allows at once", result.withNullAuthz),
            ("with auth_request to another nginx process that allows at once", result.withNullProcess),
            ("with auth_request to audit authz", result.withAuthz),
        ] {
            print(
                "| \(name) | "
                    + String(format: "%.0f | %.0f µs |", measured.requestsPerSecond, measured.p50Microseconds))
        }
        print(
            String(
                format: "\nWith audit authz: %.2f× the requests/s of nginx without authorization (target ≥ 0.8×); "
                    + "%.2f× those of auth_request to a server of the gateway's that allows at once (no "
                    + "authorizer's work), %.2f× those of auth_request to another nginx process that allows at once "
                    + "(%.2f× nginx without authorization)\n",
                result.withAuthz.requestsPerSecond / result.withoutAuthz.requestsPerSecond,
                result.withAuthz.requestsPerSecond / result.withNullAuthz.requestsPerSecond,
                result.withAuthz.requestsPerSecond / result.withNullProcess.requestsPerSecond,
                result.withNullProcess.requestsPerSecond / result.withoutAuthz.requestsPerSecond))
        print("| gRPC Check at \(rate)/s | achieved/s | round trip p50 | p99 | handler p50 | p99 |")
        print("|---|---:|---:|---:|---:|---:|")
        for run in result.grpc {
            print(
                String(
                    format: "| %d caller%@ | %.0f | %.0f µs | %.0f µs | %.1f µs | %.1f µs |", run.callers,
                    run.callers == 1 ? "" : "s", run.achievedPerSecond, run.p50Microseconds, run.p99Microseconds,
                    run.handlerP50Microseconds, run.handlerP99Microseconds))
        }
        print(
            "\nTarget: p50 ≤ 50 µs, p99 ≤ 500 µs. OPA's published Envoy figures (not measured here): 0.16–0.44 ms "
                + "median evaluation, 0.27–0.73 ms median handler time, p99 about 3 ms at 1,000 requests/s.")
    }
}

/// `audit-bench authz`: section 9 alone.
struct Authz: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "authz", abstract: "audit authz behind nginx auth_request, and Envoy's gRPC Check under load.")
    @OptionGroup var options: DataOptions
    @Option(help: "The audit binary.") var audit = "../.build/release/audit"

    static let heading =
        "\n## 9. audit authz (rules-10k, log on): nginx auth_request (wrk, medians of \(AuthzBenchmark.rounds) "
        + "alternated \(ProxyBenchmark.seconds)-s runs), and Envoy's gRPC Check paced at \(AuthzBenchmark.rate)/s "
        + "for \(AuthzBenchmark.seconds) s\n"

    func run() async throws {
        print(Self.heading)
        try await Self.report(data: BenchData(directory: options.data), audit: audit)
    }

    static func report(data: BenchData, audit: String) async throws {
        AuthzBenchmark.printTable(
            try await AuthzBenchmark(
                auditBinary: audit, policySource: try data.blockingPolicySource("rules-10k.txt"),
                urls: try data.requests(count: 4_096).map(\.url)
            ).run())
    }
}
