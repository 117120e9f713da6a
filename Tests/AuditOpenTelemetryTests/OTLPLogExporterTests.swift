import AuditOpenTelemetry
import AuditPipeline
import AuditPolicy
import AuditReport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The OTLP receiver of `Tests/Servers/otlp_receiver.py` on a port of its own: it decodes every
/// request with the official OpenTelemetry protobuf definitions and writes one line per log record.
private final class Receiver {
    let port: Int
    let output: String
    private var process: Process?

    init(port: Int, output: String) {
        self.port = port
        self.output = output
    }

    var endpoint: URL { URL(string: "http://127.0.0.1:\(port)/v1/logs") ?? URL(fileURLWithPath: "/") }

    func start() async throws {
        let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Servers/otlp_receiver.py").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", script, String(port), output]
        let ready = Pipe()
        process.standardOutput = ready
        try process.run()
        self.process = process
        // The receiver prints "ready" once it listens.
        let line = ready.fileHandleForReading.availableData
        try #require(String(decoding: line, as: UTF8.self).hasPrefix("ready"), "the receiver did not start")
    }

    /// Kills the receiver (SIGKILL: the test process's children may inherit SIGTERM ignored).
    func stop() {
        if let process { kill(process.processIdentifier, SIGKILL) }
        process?.waitUntilExit()
        process = nil
    }

    /// Every log record received, as the receiver wrote it.
    var records: [[String: Any]] {
        let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// Waits until `count` records arrived (at most 20 s).
    func waitFor(_ count: Int) async throws {
        for _ in 0..<400 where records.count < count { try await Task.sleep(for: .milliseconds(50)) }
    }

    static func freePort() -> Int {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0
            }
        }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// A pipeline exporting to `exporter` (and its metrics to `metrics`), deciding by a small policy.
private func pipeline(exporting exporter: OTLPLogExporter?, metrics: OTLPMetricsExporter? = nil) throws -> AuditPipeline
{
    var configuration = PipelineConfiguration()
    configuration.recordExporters = exporter.map { [$0] } ?? []
    configuration.metricsFactory = metrics
    let policy = try Policy(
        parsing: "[block] message=\"No\"\nno ^https://blocked\\.test/\n[record]\nall .\n", file: "p.rules")
    return try AuditPipeline(policy: policy, configuration: configuration)
}

/// Decides and finishes `count` requests numbered from `first`, each URL carrying a secret.
private func send(_ count: Int, from first: Int = 0, through pipeline: AuditPipeline) throws -> [String] {
    let ids = (first..<(first + count)).map { number in
        let host = number % 5 == 0 ? "blocked.test" : "api.example.com"
        let audited = pipeline.admit(
            AuditRequest(method: "GET", url: "https://\(host)/v1/items/\(number)?access_token=s3cret-\(number)"),
            bodyBytes: nil)
        let isBlocked = audited.verdict.action == .block
        audited.finish(
            Outcome(
                isBlocked ? .blocked : .response, status: isBlocked ? nil : 200, bytes: 10, durationMilliseconds: 1.5))
        return audited.id.uuidString
    }
    // The records are exported as they are made, on the pipeline's bookkeeping queue.
    pipeline.recordFinishedNow()
    return ids
}

private func temporaryFolder() throws -> String {
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("otlp-\(UUID().uuidString)").path
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
}

@Suite(.serialized) struct OTLPLogExporterTests {
    @Test("every record arrives once as an OTLP log record, redacted, with HTTP semantic-convention attributes")
    func recordsArriveOnce() async throws {
        let folder = try temporaryFolder()
        let receiver = Receiver(port: Receiver.freePort(), output: folder + "/received.jsonl")
        try await receiver.start()
        defer { receiver.stop() }
        let exporter = try OTLPLogExporter(configuration: .init(endpoint: receiver.endpoint))
        let audit = try pipeline(exporting: exporter)
        let ids = try send(300, through: audit)
        try await audit.shutdown()
        try await receiver.waitFor(300)
        let records = receiver.records
        #expect(records.count == 300)
        #expect(records.compactMap { $0["audit.request_id"] as? String }.sorted() == ids.sorted())
        #expect(exporter.exportedCount == 300 && exporter.droppedCount == 0)
        let blocked = try #require(records.first { ($0["server.address"] as? String) == "blocked.test" })
        #expect(blocked["http.request.method"] as? String == "GET")
        #expect(blocked["audit.verdict"] as? String == "block")
        #expect(blocked["audit.rule"] as? String == "p/no")
        #expect(blocked["audit.category"] as? String == "p")
        #expect(blocked["severity"] as? String == "WARN")
        #expect(blocked["service"] as? String == "request-audit")
        let passed = try #require(records.first { ($0["server.address"] as? String) == "api.example.com" })
        #expect(passed["http.response.status_code"] as? Int == 200)
        let text = try String(contentsOfFile: receiver.output, encoding: .utf8)
        #expect(!text.contains("s3cret"))
        #expect((passed["url.full"] as? String)?.contains("access_token=REDACTED-") == true)
    }

    @Test("across a receiver outage records wait in the spool and arrive once it is back, none twice")
    func outage() async throws {
        let folder = try temporaryFolder()
        let receiver = Receiver(port: Receiver.freePort(), output: folder + "/received.jsonl")
        try await receiver.start()
        var configuration = OTLPLogExporter.Configuration(endpoint: receiver.endpoint)
        configuration.spoolDirectory = folder + "/spool"
        configuration.retryInterval = .milliseconds(100)
        let exporter = try OTLPLogExporter(configuration: configuration)
        let audit = try pipeline(exporting: exporter)
        var ids = try send(100, through: audit)
        try await receiver.waitFor(100)
        receiver.stop()
        ids += try send(150, from: 100, through: audit)
        try await Task.sleep(for: .milliseconds(500))
        #expect(receiver.records.count == 100)
        try await receiver.start()
        defer { receiver.stop() }
        try await receiver.waitFor(250)
        try await audit.shutdown()
        let received = receiver.records.compactMap { $0["audit.request_id"] as? String }
        #expect(received.count == 250)
        #expect(received.sorted() == ids.sorted())
        #expect(exporter.droppedCount == 0)
        #expect((try FileManager.default.contentsOfDirectory(atPath: folder + "/spool")).isEmpty)
    }

    @Test("never-drop mode spools what the queue has no room for; all arrive once the receiver starts")
    func neverDrop() async throws {
        let folder = try temporaryFolder()
        let receiver = Receiver(port: Receiver.freePort(), output: folder + "/received.jsonl")
        var configuration = OTLPLogExporter.Configuration(endpoint: receiver.endpoint)
        configuration.spoolDirectory = folder + "/spool"
        configuration.neverDrop = true
        configuration.queueCapacity = 5
        configuration.retryInterval = .milliseconds(100)
        let exporter = try OTLPLogExporter(configuration: configuration)
        let audit = try pipeline(exporting: exporter)
        let ids = try send(200, through: audit)
        #expect(exporter.droppedCount == 0)
        try await receiver.start()
        defer { receiver.stop() }
        try await receiver.waitFor(200)
        try await audit.shutdown()
        #expect(receiver.records.compactMap { $0["audit.request_id"] as? String }.sorted() == ids.sorted())
    }

    @Test("without a spool, what the collector cannot take is dropped and counted, never sent twice")
    func dropsCounted() async throws {
        let folder = try temporaryFolder()
        let receiver = Receiver(port: Receiver.freePort(), output: folder + "/received.jsonl")
        var configuration = OTLPLogExporter.Configuration(endpoint: receiver.endpoint)
        configuration.queueCapacity = 20
        configuration.retryInterval = .milliseconds(100)
        configuration.shutdownTimeout = .seconds(2)
        let exporter = try OTLPLogExporter(configuration: configuration)
        let audit = try pipeline(exporting: exporter)
        _ = try send(100, through: audit)
        try await Task.sleep(for: .milliseconds(300))
        try await receiver.start()
        defer { receiver.stop() }
        _ = try send(50, from: 100, through: audit)
        try await audit.shutdown()
        try await Task.sleep(for: .milliseconds(200))
        let received = receiver.records.compactMap { $0["audit.request_id"] as? String }
        #expect(exporter.droppedCount > 0)
        #expect(received.count + exporter.droppedCount == 150)
        #expect(Set(received).count == received.count)
    }

    @Test("the pipeline's metrics arrive as OTLP metrics: cumulative sums and histograms")
    func metrics() async throws {
        let folder = try temporaryFolder()
        let receiver = Receiver(port: Receiver.freePort(), output: folder + "/received.jsonl")
        try await receiver.start()
        defer { receiver.stop() }
        var configuration = OTLPMetricsExporter.Configuration(
            endpoint: URL(string: "http://127.0.0.1:\(receiver.port)/v1/metrics") ?? receiver.endpoint)
        configuration.interval = .milliseconds(200)
        let exporter = OTLPMetricsExporter(configuration: configuration)
        let audit = try pipeline(exporting: nil, metrics: exporter)
        _ = try send(20, through: audit)
        try await audit.shutdown()
        await exporter.shutdown()
        let text = try String(contentsOfFile: receiver.output + ".metrics", encoding: .utf8)
        let points = text.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        /// The last exported point of `metric` with `attributes`.
        func last(_ metric: String, _ attributes: [String: String]) -> [String: Any]? {
            points.last {
                $0["metric"] as? String == metric && ($0["attributes"] as? [String: String] ?? [:]) == attributes
            }
        }
        #expect(last("audit_requests_total", ["verdict": "block"])?["value"] as? Int == 4)
        #expect(last("audit_requests_total", ["verdict": "pass"])?["value"] as? Int == 16)
        #expect(
            last("audit_rule_requests_total", ["rule": "p/no", "category": "p", "verdict": "block"])?["value"] as? Int
                == 4)
        #expect(last("audit_recorded_total", ["rule": "p/all", "category": "p"])?["value"] as? Int == 20)
        #expect(last("audit_decision_duration_seconds", [:])?["count"] as? Int == 20)
        #expect(last("audit_decision_duration_seconds", [:])?["kind"] as? String == "histogram")
        #expect(last("audit_request_duration_seconds", ["outcome": "blocked"])?["count"] as? Int == 4)
    }
}
