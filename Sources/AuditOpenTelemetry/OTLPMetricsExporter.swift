import AuditLocking
import CoreMetrics
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A swift-metrics backend that exports the pipeline's metrics as OTLP metrics over OTLP/HTTP
/// (JSON) every ``Configuration/interval``: counters as cumulative monotonic sums, timers and
/// aggregating recorders as cumulative histograms (seconds for timers), meters as gauges.
///
/// Give it to the pipeline (``PipelineConfiguration/metricsFactory``), or bootstrap it for the
/// whole process with `MetricsSystem.bootstrap`. A failed export is simply tried again at the next
/// interval: the values are cumulative, so nothing is lost while the collector is down.
public final class OTLPMetricsExporter: MetricsFactory, Sendable {
    /// Where and how often to export.
    public struct Configuration: Sendable {
        /// The collector's metrics endpoint, e.g. `http://127.0.0.1:4318/v1/metrics`.
        public var endpoint: URL
        /// Extra HTTP headers.
        public var headers: [String: String] = [:]
        /// The `service.name` resource attribute.
        public var serviceName = "request-audit"
        /// How often to export.
        public var interval: Duration = .seconds(10)

        /// A configuration exporting to `endpoint`.
        public init(endpoint: URL) {
            self.endpoint = endpoint
        }
    }

    /// The settings.
    public let configuration: Configuration
    private let instruments = Locked<[InstrumentKey: any Instrument]>([:])
    private let start = Date()
    private let sender: OTLPHTTPSender
    /// Exports run here, on a timer: never on the Swift concurrency pool.
    private let queue = DispatchQueue(label: "RequestAudit.OTLPMetricsExporter")
    private let timer: TimerBox

    /// The export timer. `@unchecked`: a dispatch source is thread-safe, and this one is only
    /// scheduled in `init` and cancelled in `shutdown()`.
    private struct TimerBox: @unchecked Sendable {
        let source: DispatchSourceTimer
    }

    private struct InstrumentKey: Hashable {
        let label: String
        let dimensions: [String]
    }

    /// Creates the exporter and starts exporting every interval.
    public init(configuration: Configuration) {
        self.configuration = configuration
        sender = OTLPHTTPSender(endpoint: configuration.endpoint, headers: configuration.headers)
        let seconds =
            Double(configuration.interval.components.seconds)
            + Double(configuration.interval.components.attoseconds) / 1e18
        let source = DispatchSource.makeTimerSource(queue: queue)
        timer = TimerBox(source: source)
        source.schedule(deadline: .now() + seconds, repeating: seconds)
        source.setEventHandler { [weak self] in _ = self?.exportNow() }
        source.resume()
    }

    /// Exports the current values now; true when the collector took them.
    @discardableResult
    public func export() async -> Bool {
        await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
            queue.async { continuation.resume(returning: self.exportNow()) }
        }
    }

    /// Exports a last time and stops.
    public func shutdown() async {
        timer.source.cancel()
        await export()
        sender.close()
    }

    /// POSTs the current values and waits for the answer (on `queue`).
    private func exportNow() -> Bool {
        let current = instruments.withLock { Array($0.values) }
        guard !current.isEmpty else { return true }
        return sender.post(body(current))
    }

    // MARK: MetricsFactory

    /// A cumulative counter.
    public func makeCounter(label: String, dimensions: [(String, String)]) -> CounterHandler {
        instrument(label, dimensions) { CounterInstrument(label: $0, dimensions: $1) }
    }

    /// A cumulative counter of fractions.
    public func makeFloatingPointCounter(label: String, dimensions: [(String, String)]) -> FloatingPointCounterHandler {
        instrument(label, dimensions) { GaugeInstrument(label: $0, dimensions: $1, isSum: true) }
    }

    /// A gauge.
    public func makeMeter(label: String, dimensions: [(String, String)]) -> MeterHandler {
        instrument(label, dimensions) { GaugeInstrument(label: $0, dimensions: $1, isSum: false) }
    }

    /// A histogram when `aggregate`, else a gauge.
    public func makeRecorder(label: String, dimensions: [(String, String)], aggregate: Bool) -> RecorderHandler {
        guard aggregate else {
            return instrument(label, dimensions) { GaugeInstrument(label: $0, dimensions: $1, isSum: false) }
        }
        return instrument(label, dimensions) {
            HistogramInstrument(label: $0, dimensions: $1, bounds: HistogramInstrument.valueBounds, scale: 1)
        }
    }

    /// A histogram of seconds.
    public func makeTimer(label: String, dimensions: [(String, String)]) -> TimerHandler {
        instrument(label, dimensions) {
            HistogramInstrument(label: $0, dimensions: $1, bounds: HistogramInstrument.secondBounds, scale: 1e-9)
        }
    }

    /// Instruments stay until the exporter goes: their cumulative values are still exported.
    public func destroyCounter(_ handler: CounterHandler) {}
    /// Kept, as counters are.
    public func destroyMeter(_ handler: MeterHandler) {}
    /// Kept, as counters are.
    public func destroyFloatingPointCounter(_ handler: FloatingPointCounterHandler) {}
    /// Kept, as counters are.
    public func destroyRecorder(_ handler: RecorderHandler) {}
    /// Kept, as counters are.
    public func destroyTimer(_ handler: TimerHandler) {}

    private func instrument<Made: Instrument>(
        _ label: String, _ dimensions: [(String, String)], make: (String, [(String, String)]) -> Made
    ) -> Made {
        let key = InstrumentKey(label: label, dimensions: dimensions.flatMap { [$0.0, $0.1] })
        return instruments.withLock { instruments in
            if let existing = instruments[key] as? Made { return existing }
            let made = make(label, dimensions)
            instruments[key] = made
            return made
        }
    }

    // MARK: Encoding

    private func body(_ current: [any Instrument]) -> Data {
        let now = String(UInt64(Date().timeIntervalSince1970 * 1e9))
        let started = String(UInt64(start.timeIntervalSince1970 * 1e9))
        let byName = Dictionary(grouping: current, by: \.label)
        let metrics: [[String: Any]] = byName.keys.sorted().map { name in
            let points = (byName[name] ?? []).map { $0.dataPoint(start: started, now: now) }
            return (byName[name]?.first?.metric(name: name, points: points)) ?? [:]
        }
        let request: [String: Any] = [
            "resourceMetrics": [
                [
                    "resource": [
                        "attributes": [["key": "service.name", "value": ["stringValue": configuration.serviceName]]]
                    ],
                    "scopeMetrics": [["scope": ["name": "RequestAudit"], "metrics": metrics]],
                ]
            ]
        ]
        return (try? JSONSerialization.data(withJSONObject: request, options: [.sortedKeys])) ?? Data()
    }
}

/// One metric series the exporter keeps.
private protocol Instrument: AnyObject, Sendable {
    var label: String { get }
    func dataPoint(start: String, now: String) -> [String: Any]
    func metric(name: String, points: [[String: Any]]) -> [String: Any]
}

extension Instrument {
    static func attributes(_ dimensions: [(String, String)]) -> [[String: Any]] {
        dimensions.map { ["key": $0.0, "value": ["stringValue": $0.1]] }
    }
}

private final class CounterInstrument: Instrument, CounterHandler {
    let label: String
    private let dimensions: [(String, String)]
    private let value = Locked<Int64>(0)

    init(label: String, dimensions: [(String, String)]) {
        self.label = label
        self.dimensions = dimensions
    }

    func increment(by amount: Int64) { value.withLock { $0 += amount } }
    func reset() { value.withLock { $0 = 0 } }

    func dataPoint(start: String, now: String) -> [String: Any] {
        [
            "attributes": Self.attributes(dimensions), "startTimeUnixNano": start, "timeUnixNano": now,
            "asInt": String(value.withLock { $0 }),
        ]
    }

    func metric(name: String, points: [[String: Any]]) -> [String: Any] {
        ["name": name, "sum": ["aggregationTemporality": 2, "isMonotonic": true, "dataPoints": points]]
    }
}

private final class GaugeInstrument: Instrument, MeterHandler, RecorderHandler, FloatingPointCounterHandler {
    let label: String
    private let dimensions: [(String, String)]
    private let isSum: Bool
    private let value = Locked<Double>(0)

    init(label: String, dimensions: [(String, String)], isSum: Bool) {
        self.label = label
        self.dimensions = dimensions
        self.isSum = isSum
    }

    func set(_ value: Int64) { self.value.withLock { $0 = Double(value) } }
    func set(_ value: Double) { self.value.withLock { $0 = value } }
    func increment(by amount: Double) { value.withLock { $0 += amount } }
    func decrement(by amount: Double) { value.withLock { $0 -= amount } }
    func record(_ value: Int64) { set(value) }
    func record(_ value: Double) { set(value) }
    func reset() { value.withLock { $0 = 0 } }

    func dataPoint(start: String, now: String) -> [String: Any] {
        [
            "attributes": Self.attributes(dimensions), "startTimeUnixNano": start, "timeUnixNano": now,
            "asDouble": value.withLock { $0 },
        ]
    }

    func metric(name: String, points: [[String: Any]]) -> [String: Any] {
        isSum
            ? ["name": name, "sum": ["aggregationTemporality": 2, "isMonotonic": true, "dataPoints": points]]
            : ["name": name, "gauge": ["dataPoints": points]]
    }
}

private final class HistogramInstrument: Instrument, TimerHandler, RecorderHandler {
    /// Bucket bounds in seconds: 1 µs to 10 s.
    static let secondBounds: [Double] = [
        0.000_001, 0.000_002_5, 0.000_005, 0.000_01, 0.000_025, 0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5,
        0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
    ]
    /// Bucket bounds for plain values.
    static let valueBounds: [Double] = [1, 2, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000]

    let label: String
    private let dimensions: [(String, String)]
    private let bounds: [Double]
    private let scale: Double
    private let state: Locked<(counts: [Int], sum: Double, count: Int)>

    init(label: String, dimensions: [(String, String)], bounds: [Double], scale: Double) {
        self.label = label
        self.dimensions = dimensions
        self.bounds = bounds
        self.scale = scale
        state = Locked((counts: [Int](repeating: 0, count: bounds.count + 1), sum: 0, count: 0))
    }

    func recordNanoseconds(_ duration: Int64) { add(Double(duration) * scale) }
    func record(_ value: Int64) { add(Double(value) * scale) }
    func record(_ value: Double) { add(value * scale) }

    private func add(_ value: Double) {
        let bucket = bounds.firstIndex { value <= $0 } ?? bounds.count
        state.withLock { state in
            state.counts[bucket] += 1
            state.sum += value
            state.count += 1
        }
    }

    func dataPoint(start: String, now: String) -> [String: Any] {
        let current = state.withLock { $0 }
        return [
            "attributes": Self.attributes(dimensions), "startTimeUnixNano": start, "timeUnixNano": now,
            "count": String(current.count), "sum": current.sum, "bucketCounts": current.counts.map(String.init),
            "explicitBounds": bounds,
        ]
    }

    func metric(name: String, points: [[String: Any]]) -> [String: Any] {
        [
            "name": name, "unit": scale == 1 ? "1" : "s",
            "histogram": ["aggregationTemporality": 2, "dataPoints": points],
        ]
    }
}
