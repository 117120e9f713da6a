import ArgumentParser
import AuditOpenTelemetry
import AuditPipeline
import AuditPolicy
import AuditPrometheus
import AuditProxy
import AuditReport
import Dispatch
import Foundation

extension ProxyConfiguration.WarningMode: ExpressibleByArgument {}

/// `audit proxy`: a forward HTTP proxy that audits every request of any client (curl, git, npm,
/// pip, browsers, SDKs) against the policy.
struct ProxyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "proxy",
        abstract: "Run a forward HTTP proxy (plain HTTP and CONNECT) that audits every request against the policy.",
        discussion: """
            Point clients at it with HTTP_PROXY and HTTPS_PROXY ('audit env' prints them). Plain HTTP requests are \
            decided on their method, URL and headers; HTTPS (CONNECT) on https://HOST[:PORT] and the CONNECT's \
            headers, unless --intercept-tls terminates the tunnel's TLS to decide each request inside as plain HTTP. A refused request gets 403 with a JSON body naming the rule; a warning is acknowledged by \
            sending the request again with the header 'Audit-Acknowledge: RULE-ID'. SIGHUP reloads the policies \
            (the old ones stay in force on error); SIGINT or SIGTERM stops accepting, finishes what is in flight \
            and flushes the log.
            """
    )

    @Option(name: .long, help: "The address to listen on, HOST:PORT.")
    var listen = "127.0.0.1:8080"

    @Option(name: .long, help: "The folder of .rules files.")
    var policies = "policies"

    @Option(name: .long, help: "The JSON Lines audit log to append to.")
    var log = "audit.jsonl"

    @Option(
        name: .customLong("log-keep"),
        help:
            "Rotated log files to keep (rotation at 10 MiB); older ones are deleted, each deletion noted in the log. Default: keep all."
    )
    var logKeep: Int?

    @OptionGroup var logKey: LogKeyOptions

    @Option(name: .customLong("on-error"), help: "When a match fails: block (fail closed) or pass (ignore the rule).")
    var onError = MatchErrorHandling.block

    @Option(name: .long, help: "What a warn verdict does: deny (403 until acknowledged) or allow (proceed and record).")
    var warn = ProxyConfiguration.WarningMode.deny

    @Option(
        name: .long, help: "A shadow policy folder: decided beside the live one, never enforced, differences recorded.")
    var shadow: String?

    @Option(
        name: .customLong("connect-port"),
        help: "A port CONNECT may open a tunnel to (repeatable; default 443; 'any' for every port).")
    var connectPorts: [String] = []

    @Flag(name: .long, help: "Reload the policies when a .rules file changes.")
    var watch = false

    @Option(name: .customLong("max-connections"), help: "Most client connections open at once.")
    var maximumConnections = 4_096

    @Option(help: "Serve Prometheus metrics at http://HOST:PORT/metrics.")
    var metrics: String?

    @Option(
        name: .customLong("otlp-endpoint"),
        help:
            "Export each record as an OTLP log record to this OTLP/HTTP logs URL (e.g. http://127.0.0.1:4318/v1/logs).")
    var otlpEndpoint: String?

    @Option(name: .customLong("otlp-spool"), help: "Where OTLP batches wait while the collector is unreachable.")
    var otlpSpool: String?

    @Flag(
        name: .customLong("otlp-never-drop"),
        help: "Spool records the OTLP queue has no room for instead of dropping them.")
    var otlpNeverDrop = false

    @OptionGroup var cacheOptions: CacheOptions

    @OptionGroup var recording: RecordingOptions

    #if TLSInterception
        @OptionGroup var tls: TLSOptions
    #endif

    func validate() throws {
        _ = try Self.hostAndPort(listen)
        _ = try allowedConnectPorts()
        if let metrics { _ = try Self.hostAndPort(metrics, option: "--metrics") }
        if let otlpEndpoint, URL(string: otlpEndpoint)?.scheme?.hasPrefix("http") != true {
            throw ValidationError("--otlp-endpoint: expected an http(s) URL, got '\(otlpEndpoint)'")
        }
        if otlpNeverDrop, otlpSpool == nil { throw ValidationError("--otlp-never-drop needs --otlp-spool DIR") }
    }

    /// The ports of `--connect-port` (nil: any), 443 when none is given.
    func allowedConnectPorts() throws -> Set<Int>? {
        if connectPorts.contains("any") { return nil }
        guard !connectPorts.isEmpty else { return [443] }
        return Set(
            try connectPorts.map { text in
                guard let port = Int(text), (1...65_535).contains(port) else {
                    throw ValidationError("--connect-port: expected a port from 1 to 65535 or 'any', got '\(text)'")
                }
                return port
            })
    }

    /// `HOST:PORT` split, or a usage error naming the option.
    static func hostAndPort(_ text: String, option: String = "--listen") throws -> (String, Int) {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65_535).contains(port), colon > text.startIndex
        else {
            throw ValidationError("\(option): expected HOST:PORT, got '\(text)'")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host, port)
    }

    func run() async throws {
        let policy = try loadPolicy(directory: policies)
        var configuration = ProxyConfiguration()
        (configuration.host, configuration.port) = try Self.hostAndPort(listen)
        configuration.warnings = warn
        configuration.connectPorts = try allowedConnectPorts()
        configuration.maximumConnections = maximumConnections
        configuration.pipeline.logPath = log
        configuration.pipeline.logRotation = LogRotation(
            maxBytes: 10 << 20, keep: logKeep ?? LogRotation.keepEverything)
        configuration.pipeline.logChainKey = try logKey.key()
        configuration.pipeline.onMatchError = onError
        if let shadow { configuration.pipeline.shadowPolicy = try loadPolicy(directory: shadow) }
        let cache = try cacheOptions.open(for: policy, command: "audit proxy")
        defer { cache?.removeTemporary() }
        configuration.cache = cache?.cache
        try recording.configure(&configuration, command: "audit proxy")
        var interceptionNote = ""
        #if TLSInterception
            let interception = try tls.settings(command: "audit proxy")
            defer { interception?.1.removeTemporary() }
            configuration.tlsInterception = interception?.0
            if let (settings, files) = interception {
                interceptionNote =
                    ", TLS interception \(settings.scope.rawValue) (CA \(files.folder.certificatePath)"
                    + (files.isTemporary ? ", in memory)" : ")")
            }
        #endif
        // Metrics are bootstrapped before the pipeline exists: it makes its handlers when it starts.
        let endpoint = try await startMetrics()
        if let exporter = try otlpExporter() { configuration.pipeline.recordExporters.append(exporter) }
        let otlpMetrics = otlpMetricsExporter()
        if let otlpMetrics { configuration.pipeline.metricsFactory = otlpMetrics }
        let pipeline: AuditPipeline
        do {
            pipeline = try AuditPipeline(policy: policy, configuration: configuration.pipeline)
        } catch {
            CommandOutput.errorLine(error.description)
            throw ExitCode.failure
        }
        let proxy = ProxyServer(configuration: configuration, pipeline: pipeline)
        do {
            try await proxy.start()
        } catch {
            CommandOutput.errorLine("audit proxy: cannot listen on \(listen): \(error)")
            throw ExitCode.failure
        }
        if watch { pipeline.watchPolicies(in: policies) }
        let directory = policies
        let shadowDirectory = shadow
        let signals = SignalWatch()
        signals.onReload {
            do throws(PipelineError) {
                let loaded = try pipeline.reloadPolicy(from: directory)
                CommandOutput.errorLine("audit proxy: reloaded \(plural(loaded.rules.count, "rule")) from \(directory)")
                if let shadowDirectory {
                    let shadow = try pipeline.reloadShadowPolicy(from: shadowDirectory)
                    CommandOutput.errorLine(
                        "audit proxy: reloaded the shadow policy, \(plural(shadow.rules.count, "rule")), from \(shadowDirectory)"
                    )
                }
            } catch {
                CommandOutput.errorLine("audit proxy: \(error.description)")
            }
        }
        CommandOutput.line(
            "audit proxy listening on \(configuration.host):\(proxy.port ?? configuration.port) — "
                + "\(plural(policy.rules.count, "rule")) from \(policies), log \(log), warnings \(warn.rawValue)"
                + (shadow.map { ", shadow \($0)" } ?? "") + (watch ? ", watching" : "") + interceptionNote
                + (cache?.note ?? ""))
        await signals.waitForStop()
        CommandOutput.errorLine("audit proxy: stopping (finishing \(pipeline.inFlightCount) in flight)")
        await proxy.stop()
        await endpoint?.stop()
        await otlpMetrics?.shutdown()
        let statistics = pipeline.statistics
        CommandOutput.errorLine(
            "audit proxy: stopped after \(plural(statistics.requests, "request")); "
                + Verdict.Action.allCases.map { "\($0.rawValue) \(statistics.verdicts[$0] ?? 0)" }.joined(
                    separator: " · "))
    }
}

extension ProxyCommand {
    /// The OTLP log exporter of `--otlp-endpoint`, or nil without the option.
    private func otlpExporter() throws -> OTLPLogExporter? {
        guard let otlpEndpoint, let url = URL(string: otlpEndpoint) else { return nil }
        var otlp = OTLPLogExporter.Configuration(endpoint: url)
        otlp.spoolDirectory = otlpSpool
        otlp.neverDrop = otlpNeverDrop
        do {
            return try OTLPLogExporter(configuration: otlp)
        } catch {
            CommandOutput.errorLine("audit proxy: cannot create the OTLP spool \(otlpSpool ?? "-"): \(error)")
            throw ExitCode.failure
        }
    }

    /// With `--otlp-endpoint …/v1/logs`, the metrics go to the sibling `…/v1/metrics` every 10 s
    /// (unless `--metrics` serves them to Prometheus instead).
    private func otlpMetricsExporter() -> OTLPMetricsExporter? {
        guard metrics == nil, let otlpEndpoint, let logs = URL(string: otlpEndpoint) else { return nil }
        let base = logs.path.hasSuffix("/v1/logs") ? logs.deletingLastPathComponent().deletingLastPathComponent() : logs
        return OTLPMetricsExporter(configuration: .init(endpoint: base.appendingPathComponent("v1/metrics")))
    }

    /// The Prometheus endpoint of `--metrics`, started, or nil without the option.
    private func startMetrics() async throws -> PrometheusEndpoint? {
        guard let metrics else { return nil }
        let (host, port) = try Self.hostAndPort(metrics, option: "--metrics")
        let endpoint = PrometheusEndpoint(registry: PrometheusEndpoint.bootstrap(), host: host, port: port)
        do {
            try await endpoint.start()
        } catch {
            CommandOutput.errorLine("audit proxy: cannot serve metrics on \(metrics): \(error)")
            throw ExitCode.failure
        }
        CommandOutput.errorLine("audit proxy: metrics on http://\(host):\(endpoint.port ?? port)/metrics")
        return endpoint
    }
}

/// SIGHUP (reload) and SIGINT/SIGTERM (stop), delivered on a queue of their own.
private final class SignalWatch: @unchecked Sendable {
    // @unchecked: `sources` is set in `init` and never changed; dispatch sources are thread-safe.
    private let queue = DispatchQueue(label: "audit.proxy.signals")
    private let sources: [DispatchSourceSignal]
    private let stop = DispatchSemaphore(value: 0)

    init() {
        var sources: [DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM, SIGHUP] {
            signal(number, SIG_IGN)
            sources.append(DispatchSource.makeSignalSource(signal: number, queue: queue))
        }
        self.sources = sources
        let stop = stop
        for source in sources.prefix(2) {
            source.setEventHandler { stop.signal() }
            source.resume()
        }
    }

    func onReload(_ reload: @escaping @Sendable () -> Void) {
        sources[2].setEventHandler(handler: reload)
        sources[2].resume()
    }

    /// Returns once SIGINT or SIGTERM arrives.
    func waitForStop() async {
        let stop = stop
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                stop.wait()
                continuation.resume()
            }
        }
    }
}
