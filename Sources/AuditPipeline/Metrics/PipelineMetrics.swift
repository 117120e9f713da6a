import AuditLocking
import AuditPolicy
import AuditReport
import CoreMetrics

/// The pipeline's metrics, through swift-metrics: they reach the configuration's
/// `metricsFactory`, or else whatever backend the host bootstrapped with `MetricsSystem.bootstrap`
/// (Prometheus, StatsD, OpenTelemetry, …), and cost
/// next to nothing when none is (swift-metrics then hands out no-op handlers). Bootstrap before
/// creating the pipeline: handlers are made when it starts, and for each rule when first seen.
///
/// | metric | type | dimensions |
/// |---|---|---|
/// | `audit_requests_total` | counter | `verdict` |
/// | `audit_rule_requests_total` | counter | `rule`, `category`, `verdict` (deciding rule) |
/// | `audit_category_requests_total` | counter | `category`, `verdict` (deciding rule) |
/// | `audit_recorded_total` | counter | `rule`, `category` (record rules) |
/// | `audit_decision_duration_seconds` | timer (histogram) | — |
/// | `audit_request_duration_seconds` | timer (histogram) | `outcome` |
/// | `audit_events_dropped_total` | counter | — |
final class PipelineMetrics: Sendable {
    private let verdicts: [Verdict.Action: Counter]
    /// Counters made on first use, by label and dimensions.
    private let counters = Locked<[CounterKey: Counter]>([:])
    private let durations = Locked<[OutcomeSnapshot.Kind: Timer]>([:])
    private let factory: (any MetricsFactory)?
    private let decisionTime: Timer
    private let droppedEvents: Counter

    private struct CounterKey: Hashable {
        let label: String
        let dimensions: [String]
    }

    /// Metrics made by `factory`, or by the process's bootstrapped one when nil.
    init(factory: (any MetricsFactory)?) {
        self.factory = factory
        decisionTime = Self.timer("audit_decision_duration_seconds", [], factory)
        droppedEvents = Self.counter("audit_events_dropped_total", [], factory)
        verdicts = Dictionary(
            uniqueKeysWithValues: Verdict.Action.allCases.map {
                ($0, Self.counter("audit_requests_total", [("verdict", $0.rawValue)], factory))
            })
    }

    private static func counter(
        _ label: String, _ dimensions: [(String, String)], _ factory: (any MetricsFactory)?
    ) -> Counter {
        factory.map { Counter(label: label, dimensions: dimensions, factory: $0) }
            ?? Counter(label: label, dimensions: dimensions)
    }

    private static func timer(
        _ label: String, _ dimensions: [(String, String)], _ factory: (any MetricsFactory)?
    ) -> Timer {
        factory.map { Timer(label: label, dimensions: dimensions, factory: $0) }
            ?? Timer(label: label, dimensions: dimensions)
    }

    /// Counts a decided request.
    func decided(_ decision: DecisionSnapshot) {
        verdicts[decision.verdict]?.increment()
        decisionTime.recordNanoseconds(Int64(clamping: decision.nanoseconds))
        if let rule = decision.rule {
            let category = decision.category ?? "-"
            let verdict = decision.verdict.rawValue
            increment("audit_rule_requests_total", [("rule", rule), ("category", category), ("verdict", verdict)])
            increment("audit_category_requests_total", [("category", category), ("verdict", verdict)])
        }
        for (rule, category) in zip(decision.recorded, decision.recordedCategories) {
            increment("audit_recorded_total", [("rule", rule), ("category", category)])
        }
    }

    /// Records how long a finished request took, by how it ended.
    func finished(_ outcome: OutcomeSnapshot) {
        let timer = durations.withLock { timers in
            if let timer = timers[outcome.kind] { return timer }
            let timer = Self.timer(
                "audit_request_duration_seconds", [("outcome", outcome.kind.rawValue)], factory)
            timers[outcome.kind] = timer
            return timer
        }
        timer.recordNanoseconds(Int64(clamping: Int64((outcome.durationMilliseconds * 1_000_000).rounded())))
    }

    /// Counts events dropped for subscribers that fell behind.
    func dropped(_ count: Int) {
        if count > 0 { droppedEvents.increment(by: Int64(count)) }
    }

    /// Increments the counter `label` with `dimensions`, made on first use.
    private func increment(_ label: String, _ dimensions: [(String, String)]) {
        let key = CounterKey(label: label, dimensions: dimensions.map(\.1))
        counters.withLock { counters in
            if let counter = counters[key] { return counter }
            let counter = Self.counter(label, dimensions, factory)
            counters[key] = counter
            return counter
        }.increment()
    }
}
