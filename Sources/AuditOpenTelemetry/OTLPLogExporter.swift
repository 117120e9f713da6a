import AuditLocking
import AuditPipeline
import AuditReport
import CoreMetrics
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Exports each finished audit record as an OTLP log record over OTLP/HTTP (JSON), without ever
/// blocking a request.
///
/// Records wait in a bounded queue and go out in batches. When the collector cannot be reached,
/// a batch is written to the spool folder (if one is set) and sent again, oldest first, once the
/// collector answers; spooled batches also survive a restart. When the queue is full, a record is
/// dropped and counted (``droppedCount``, and `audit_otlp_dropped_total` in swift-metrics) — or,
/// with ``Configuration/neverDrop``, written to the spool on the caller's thread instead, trading
/// a short disk write under overload for never losing one.
///
/// ```swift
/// var otlp = OTLPLogExporter.Configuration(endpoint: URL(string: "http://127.0.0.1:4318/v1/logs")!)
/// otlp.spoolDirectory = "/var/spool/audit-otlp"
/// var configuration = AuditorConfiguration()
/// configuration.recordExporters = [try OTLPLogExporter(configuration: otlp)]
/// ```
public final class OTLPLogExporter: AuditRecordExporter {
    /// How the exporter sends and spools.
    public struct Configuration: Sendable {
        /// The collector's logs endpoint, e.g. `http://127.0.0.1:4318/v1/logs`.
        public var endpoint: URL
        /// Extra HTTP headers (authentication, say).
        public var headers: [String: String] = [:]
        /// The `service.name` resource attribute.
        public var serviceName = "request-audit"
        /// Records held in memory at most.
        public var queueCapacity = 10_000
        /// Records per request to the collector at most.
        public var batchSize = 512
        /// Where batches the collector did not take wait; nil keeps none (they are dropped and counted).
        public var spoolDirectory: String?
        /// Spool records the queue has no room for instead of dropping them (needs a spool folder).
        public var neverDrop = false
        /// How long to wait before trying the collector again after a failure.
        public var retryInterval: Duration = .seconds(1)
        /// How long `shutdown()` may take to send what is left (the rest is spooled, or dropped).
        public var shutdownTimeout: Duration = .seconds(5)

        /// A configuration sending to `endpoint`.
        public init(endpoint: URL) {
            self.endpoint = endpoint
        }
    }

    /// The settings.
    public let configuration: Configuration
    private let state = Locked(State())
    private let sender: OTLPHTTPSender
    private let droppedCounter = Counter(label: "audit_otlp_dropped_total")
    /// The worker's own thread: sending never waits for, or starves, the Swift concurrency pool.
    private let queue = DispatchQueue(label: "RequestAudit.OTLPLogExporter")
    /// Signalled when a batch is full or shutdown begins.
    private let wakeUp = DispatchSemaphore(value: 0)
    /// Signalled when the worker has ended.
    private let ended = DispatchSemaphore(value: 0)

    private struct State {
        var queue: [AuditRecord] = []
        var dropped = 0
        var exported = 0
        var spoolNumber = 0
        var isStopping = false
        /// Past the shutdown timeout: the worker stops trying.
        var isAbandoned = false
    }

    /// Creates the exporter and starts sending (spooled batches of an earlier run first).
    ///
    /// - Throws: when the spool folder cannot be created.
    public init(configuration: Configuration) throws {
        self.configuration = configuration
        sender = OTLPHTTPSender(endpoint: configuration.endpoint, headers: configuration.headers)
        if let spool = configuration.spoolDirectory {
            try FileManager.default.createDirectory(atPath: spool, withIntermediateDirectories: true)
            let numbers = Self.spooledFiles(in: spool).compactMap { Self.number(ofSpoolFile: $0) }
            state.withLock { $0.spoolNumber = (numbers.max() ?? 0) }
        }
        queue.async { self.run() }
    }

    /// Records dropped so far (queue full, or the collector unreachable without a spool).
    public var droppedCount: Int { state.withLock { $0.dropped } }

    /// Records the collector has taken so far.
    public var exportedCount: Int { state.withLock { $0.exported } }

    /// Queues `record`; never waits for the network.
    public func export(_ record: AuditRecord) {
        let (isQueued, isBatchFull) = state.withLock { state -> (Bool, Bool) in
            guard state.queue.count < configuration.queueCapacity else { return (false, false) }
            state.queue.append(record)
            return (true, state.queue.count == configuration.batchSize)
        }
        if isBatchFull { wakeUp.signal() }
        guard !isQueued else { return }
        if configuration.neverDrop, configuration.spoolDirectory != nil, spool([record]) { return }
        drop(1)
    }

    /// Sends what is queued and spooled, for at most ``Configuration/shutdownTimeout``; what is
    /// left is spooled (or dropped and counted).
    public func shutdown() async {
        state.withLock { $0.isStopping = true }
        wakeUp.signal()
        let timeout = configuration.shutdownTimeout
        let ended = ended
        let isEnded = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            // Waited for on a thread of its own, not the concurrency pool.
            Thread.detachNewThread {
                let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
                continuation.resume(returning: ended.wait(timeout: .now() + seconds) == .success)
            }
        }
        if !isEnded { state.withLock { $0.isAbandoned = true } }
        let left = state.withLock { state in
            defer { state.queue = [] }
            return state.queue
        }
        if !left.isEmpty, !(configuration.spoolDirectory != nil && spool(left)) { drop(left.count) }
        sender.close()
    }

    // MARK: Sending

    /// Sends spooled batches, then the queue, batch by batch; waits a retry interval after a
    /// failure. Runs on `queue` until shutdown.
    private func run() {
        defer { ended.signal() }
        while !state.withLock({ $0.isAbandoned }) {
            let isStopping = state.withLock { $0.isStopping }
            guard sendSpooled() else {
                // The collector is down: what queues up goes to the spool (or is dropped).
                spoolQueue()
                if isStopping { return }
                pause(configuration.retryInterval)
                continue
            }
            let batch = state.withLock { state -> [AuditRecord] in
                let batch = Array(state.queue.prefix(configuration.batchSize))
                state.queue.removeFirst(batch.count)
                return batch
            }
            if batch.isEmpty {
                if isStopping { return }
                // Until a batch is full, shutdown begins, or 100 ms pass.
                _ = wakeUp.wait(timeout: .now() + .milliseconds(100))
                continue
            }
            if send(OTLPLogEncoding.request(batch, serviceName: configuration.serviceName)) {
                state.withLock { $0.exported += batch.count }
            } else if !(configuration.spoolDirectory != nil && spool(batch)) {
                drop(batch.count)
                if !isStopping { pause(configuration.retryInterval) }
            }
        }
    }

    /// Waits `duration` on the worker's thread (shutdown cuts it short).
    private func pause(_ duration: Duration) {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        _ = wakeUp.wait(timeout: .now() + seconds)
    }

    /// POSTs one request body and waits for the answer; true when the collector took it.
    private func send(_ body: Data) -> Bool {
        sender.post(body)
    }

    /// Sends the spooled batches, oldest first, deleting each the collector took; false when one
    /// failed (the collector is down), true when none is left.
    private func sendSpooled() -> Bool {
        guard let spool = configuration.spoolDirectory else { return true }
        for file in Self.spooledFiles(in: spool) {
            let path = spool + "/" + file
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            guard send(data) else { return false }
            let records = Self.recordCount(ofSpoolFile: file)
            try? FileManager.default.removeItem(atPath: path)
            state.withLock { $0.exported += records }
        }
        return true
    }

    /// Moves everything queued to the spool (or drops it without one).
    private func spoolQueue() {
        let queued = state.withLock { state in
            defer { state.queue = [] }
            return state.queue
        }
        guard !queued.isEmpty else { return }
        if !(configuration.spoolDirectory != nil && spool(queued)) { drop(queued.count) }
    }

    // MARK: The spool

    /// Writes `records` as one request body to the spool; false when it could not.
    private func spool(_ records: [AuditRecord]) -> Bool {
        guard let directory = configuration.spoolDirectory else { return false }
        let number = state.withLock { state in
            state.spoolNumber += 1
            return state.spoolNumber
        }
        let name = String(format: "%012d-%d.json", number, records.count)
        let body = OTLPLogEncoding.request(records, serviceName: configuration.serviceName)
        let temporary = directory + "/." + name
        guard FileManager.default.createFile(atPath: temporary, contents: body) else { return false }
        return (try? FileManager.default.moveItem(atPath: temporary, toPath: directory + "/" + name)) != nil
    }

    private func drop(_ count: Int) {
        state.withLock { $0.dropped += count }
        droppedCounter.increment(by: Int64(count))
    }

    /// The spool's batch files, oldest first.
    static func spooledFiles(in directory: String) -> [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? [])
            .filter { !$0.hasPrefix(".") && $0.hasSuffix(".json") }.sorted()
    }

    private static func number(ofSpoolFile name: String) -> Int? {
        name.split(separator: "-").first.flatMap { Int($0) }
    }

    private static func recordCount(ofSpoolFile name: String) -> Int {
        name.dropLast(".json".count).split(separator: "-").last.flatMap { Int($0) } ?? 0
    }
}
