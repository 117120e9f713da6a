import ArgumentParser
import AuditOpenTelemetry
import AuditPipeline
import AuditPrometheus
import AuditProxy
import Foundation

/// The options of a long-running command (`audit proxy`, `audit authz`) that export its metrics and
/// records: Prometheus, and OTLP to a collector.
struct ExportOptions: ParsableArguments {
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

    func validate() throws {
        if let metrics { _ = try ProxyCommand.hostAndPort(metrics, option: "--metrics") }
        if let otlpEndpoint, URL(string: otlpEndpoint)?.scheme?.hasPrefix("http") != true {
            throw ValidationError("--otlp-endpoint: expected an http(s) URL, got '\(otlpEndpoint)'")
        }
        if otlpNeverDrop, otlpSpool == nil { throw ValidationError("--otlp-never-drop needs --otlp-spool DIR") }
    }

    /// What is exporting, to stop when the command stops.
    struct Exporting {
        let endpoint: PrometheusEndpoint?
        let otlpMetrics: OTLPMetricsExporter?

        func stop() async {
            await endpoint?.stop()
            await otlpMetrics?.shutdown()
        }
    }

    /// Starts the Prometheus endpoint, and sets `pipeline`'s OTLP record exporter and metrics factory;
    /// before the pipeline exists, which makes its metric handlers when it starts.
    func start(into pipeline: inout PipelineConfiguration, command: String) async throws -> Exporting {
        let endpoint = try await startMetrics(command: command)
        if let exporter = try otlpExporter(command: command) { pipeline.recordExporters.append(exporter) }
        let otlpMetrics = otlpMetricsExporter()
        if let otlpMetrics { pipeline.metricsFactory = otlpMetrics }
        return Exporting(endpoint: endpoint, otlpMetrics: otlpMetrics)
    }

    /// The OTLP log exporter of `--otlp-endpoint`, or nil without the option.
    private func otlpExporter(command: String) throws -> OTLPLogExporter? {
        guard let otlpEndpoint, let url = URL(string: otlpEndpoint) else { return nil }
        var otlp = OTLPLogExporter.Configuration(endpoint: url)
        otlp.spoolDirectory = otlpSpool
        otlp.neverDrop = otlpNeverDrop
        do {
            return try OTLPLogExporter(configuration: otlp)
        } catch {
            CommandOutput.errorLine("\(command): cannot create the OTLP spool \(otlpSpool ?? "-"): \(error)")
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
    private func startMetrics(command: String) async throws -> PrometheusEndpoint? {
        guard let metrics else { return nil }
        let (host, port) = try ProxyCommand.hostAndPort(metrics, option: "--metrics")
        let endpoint = PrometheusEndpoint(registry: PrometheusEndpoint.bootstrap(), host: host, port: port)
        do {
            try await endpoint.start()
        } catch {
            CommandOutput.errorLine("\(command): cannot serve metrics on \(metrics): \(SocketErrorReason.of(error))")
            throw ExitCode.failure
        }
        CommandOutput.errorLine("\(command): metrics on http://\(host):\(endpoint.port ?? port)/metrics")
        return endpoint
    }
}
