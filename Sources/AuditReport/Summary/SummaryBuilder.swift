import AuditPolicy
import Foundation

/// Adds up audit records into a ``SummaryReport`` in memory that does not grow with the number of
/// records: counters per minute, per rule, per host (capped), and a log-bucket histogram of
/// decision times.
public struct SummaryBuilder: Sendable {
    /// How many entries a top list shows.
    public static let topCount = 10

    private var report = SummaryReport()
    // Counts by verdict are arrays indexed as `Verdict.Action.allCases`: a record adds to several,
    // and an index costs less than hashing the verdict's name.
    private var verdicts = VerdictCounts()
    private var perMinute: [Int64: VerdictCounts] = [:]
    private var categories: [String: VerdictCounts] = [:]
    private var decided: [String: Int] = [:]
    /// Records by the rule that recorded them (the report's `recordedByRule`).
    private var recorded: [String: Int] = [:]
    /// Keyed by the kind rather than its name, which would cost a string hash per record.
    private var outcomes: [OutcomeSnapshot.Kind: Int] = [:]
    private var hostsByVerdict = [TopCounter](repeating: TopCounter(), count: VerdictCounts.actions.count)
    private var hostsByCategory: [String: TopCounter] = [:]
    private var redirectPairs = TopCounter()
    /// Shadow differences by live verdict, shadow verdict and rule (joined by U+001F).
    private var shadowDifferences: [String: Int] = [:]
    private var errors: [String: SummaryReport.ErrorCount] = [:]
    private var histogram = LogHistogram()
    /// What cache rules saved, by rule and by host.
    private var cacheByRule: [String: SummaryReport.CacheCount] = [:]
    private var cacheByHost: [String: SummaryReport.CacheCount] = [:]
    private let since: Date?
    private let until: Date?

    /// A builder counting records with `since <= time < until`.
    public init(since: Date? = nil, until: Date? = nil) {
        self.since = since
        self.until = until
        report.since = since
        report.until = until
    }

    /// Whether `record` is inside the time filter.
    public func includes(_ record: AuditRecord) -> Bool {
        if let since, record.time < since { return false }
        if let until, record.time >= until { return false }
        return true
    }

    /// How the tables name the host of a request that has none (a request list's bare path, a
    /// gateway's check that named no host).
    static let noHost = "(no host)"

    /// Counts `record` (if inside the time filter).
    public mutating func add(_ record: AuditRecord) {
        guard includes(record) else { return }
        let action = record.decision.verdict
        let host = record.request.host.isEmpty ? Self.noHost : record.request.host
        report.totalRequests += 1
        verdicts.add(action)
        report.firstRequest = min(report.firstRequest ?? record.time, record.time)
        report.lastRequest = max(report.lastRequest ?? record.time, record.time)
        perMinute[Int64((record.time.timeIntervalSince1970 / 60).rounded(.down)), default: VerdictCounts()].add(action)
        hostsByVerdict[VerdictCounts.index(action)].add(host)
        if let category = record.decision.category {
            categories[category, default: VerdictCounts()].add(action)
            hostsByCategory[category, default: TopCounter()].add(host)
        }
        if let rule = record.decision.rule { decided[rule, default: 0] += 1 }
        for (rule, category) in zip(record.decision.recorded, record.decision.recordedCategories) {
            recorded[rule, default: 0] += 1
            report.recordedByCategory[category, default: 0] += 1
        }
        if record.decision.verdict == .redirect, let target = record.decision.redirect {
            redirectPairs.add(record.request.url + "\u{1F}" + target)
        }
        if let shadow = record.decision.shadow {
            let rule = shadow.rule ?? record.decision.rule ?? ""
            shadowDifferences[action.rawValue + "\u{1F}" + shadow.verdict.rawValue + "\u{1F}" + rule, default: 0] += 1
        }
        histogram.add(record.decision.nanoseconds)
        outcomes[record.outcome.kind, default: 0] += 1
        if let cacheRule = record.decision.cacheRule {
            Self.countCache(record, into: &cacheByRule[cacheRule, default: .init(name: cacheRule)])
            Self.countCache(record, into: &cacheByHost[host, default: .init(name: host)])
        }
        if let error = record.outcome.error {
            let key = "\(error.domain)\u{1F}\(error.code)"
            errors[
                key,
                default: SummaryReport.ErrorCount(
                    domain: error.domain, code: error.code, description: error.description, count: 0)
            ].count += 1
        }
        if !record.decision.errors.isEmpty {
            report.requestsWithMatchErrors += 1
            for error in record.decision.errors {
                let rule = error.split(separator: ":", maxSplits: 1).first.map(String.init) ?? error
                report.matchErrorsByRule[rule, default: 0] += 1
            }
        }
    }

    /// Adds the counts of `later`, a builder of the records that come after this one's in the log
    /// (with the same time filter), as if its records had been added here.
    ///
    /// Merging is how `audit report` counts on every core: each run of lines gets its own builder.
    /// Counts, times and percentiles come out exactly as if added one by one; only the host and
    /// redirect top lists, once past 50,000 names, may forget different rare names.
    public mutating func merge(_ later: SummaryBuilder) {
        let counted = later.report
        report.totalRequests += counted.totalRequests
        verdicts.merge(later.verdicts)
        report.firstRequest = [report.firstRequest, counted.firstRequest].compactMap { $0 }.min()
        report.lastRequest = [report.lastRequest, counted.lastRequest].compactMap { $0 }.max()
        report.recordedByCategory.merge(counted.recordedByCategory, uniquingKeysWith: +)
        outcomes.merge(later.outcomes, uniquingKeysWith: +)
        report.requestsWithMatchErrors += counted.requestsWithMatchErrors
        report.matchErrorsByRule.merge(counted.matchErrorsByRule, uniquingKeysWith: +)
        report.skippedLines += counted.skippedLines
        report.tornLines += counted.tornLines
        report.skippedExamples += counted.skippedExamples.prefix(max(0, 10 - report.skippedExamples.count))
        for (minute, verdicts) in later.perMinute { perMinute[minute, default: VerdictCounts()].merge(verdicts) }
        for (category, verdicts) in later.categories { categories[category, default: VerdictCounts()].merge(verdicts) }
        decided.merge(later.decided, uniquingKeysWith: +)
        recorded.merge(later.recorded, uniquingKeysWith: +)
        for (index, hosts) in later.hostsByVerdict.enumerated() { hostsByVerdict[index].merge(hosts) }
        for (category, hosts) in later.hostsByCategory {
            hostsByCategory[category, default: TopCounter()].merge(hosts)
        }
        redirectPairs.merge(later.redirectPairs)
        shadowDifferences.merge(later.shadowDifferences, uniquingKeysWith: +)
        // The first description seen for an error is kept, as when adding one by one.
        errors.merge(later.errors) { earlier, later in
            var merged = earlier
            merged.count += later.count
            return merged
        }
        histogram.merge(later.histogram)
        for (rule, count) in later.cacheByRule { cacheByRule[rule, default: .init(name: rule)].add(count) }
        for (host, count) in later.cacheByHost { cacheByHost[host, default: .init(name: host)].add(count) }
    }

    private static func countCache(_ record: AuditRecord, into count: inout SummaryReport.CacheCount) {
        count.requests += 1
        switch record.outcome.kind {
        case .cached, .revalidated, .stale:
            count.hits += 1
            count.bytesSaved += record.outcome.bytes ?? 0
        case .stored:
            count.stored += 1
        default:
            break
        }
    }

    /// Counts skipped log lines.
    public mutating func skipped(_ problems: [AuditLogProblem]) {
        report.skippedLines += problems.count
        report.tornLines += problems.count { $0.isTornLastLine }
        for problem in problems where report.skippedExamples.count < 10 {
            report.skippedExamples.append(problem.description)
        }
    }

    /// The finished report; with a policy, rules that never matched are listed.
    public func build(logs: [String], policy: Policy? = nil) -> SummaryReport {
        var report = report
        report.logs = logs
        report.verdicts = verdicts.byName(includingZeros: true)
        report.recordedByRule = recorded
        report.outcomes = Dictionary(uniqueKeysWithValues: outcomes.map { ($0.rawValue, $1) })
        report.categories = categories.map { category, verdicts in
            SummaryReport.CategoryCount(category: category, total: verdicts.total, verdicts: verdicts.byName())
        }.sorted { ($0.total, $1.category) > ($1.total, $0.category) }
        let ruleIDs = Set(decided.keys).union(recorded.keys)
        report.rules = ruleIDs.map {
            SummaryReport.RuleHits(rule: $0, decided: decided[$0] ?? 0, recorded: recorded[$0] ?? 0)
        }
        .sorted { ($0.decided + $0.recorded, $1.rule) > ($1.decided + $1.recorded, $0.rule) }
        if let policy { report.rulesWithoutHits = policy.rules.map(\.id).filter { !ruleIDs.contains($0) } }
        report.topHostsByVerdict = Dictionary(
            uniqueKeysWithValues: zip(VerdictCounts.actions, hostsByVerdict).compactMap { action, hosts in
                hosts.isEmpty ? nil : (action.rawValue, hosts.top(Self.topCount))
            })
        report.topHostsByCategory = hostsByCategory.mapValues { $0.top(Self.topCount) }
        report.redirects = redirectPairs.top(Self.topCount).map { pair in
            let parts = pair.name.split(separator: "\u{1F}", maxSplits: 1).map(String.init)
            return SummaryReport.RedirectPair(from: parts[0], to: parts.count > 1 ? parts[1] : "", count: pair.count)
        }
        if !shadowDifferences.isEmpty {
            report.shadowDifferences = shadowDifferences.map { key, count in
                let parts = key.split(separator: "\u{1F}", omittingEmptySubsequences: false).map(String.init)
                return SummaryReport.ShadowDifference(
                    live: parts[0], shadow: parts[1], rule: parts[2].isEmpty ? nil : parts[2], count: count)
            }.sorted { ($0.count, $1.live, $1.shadow, $1.rule ?? "") > ($1.count, $0.live, $0.shadow, $0.rule ?? "") }
        }
        if !cacheByRule.isEmpty {
            let order = { (a: SummaryReport.CacheCount, b: SummaryReport.CacheCount) in
                (a.requests, b.name) > (b.requests, a.name)
            }
            report.cacheByRule = cacheByRule.values.sorted(by: order)
            report.cacheByHost = Array(cacheByHost.values.sorted(by: order).prefix(Self.topCount))
        }
        report.errors = errors.values.sorted { ($0.count, $1.domain, $1.code) > ($1.count, $0.domain, $0.code) }
        report.decisionTime = histogram.percentiles()
        report.decisionTimeHistogram = histogram.bucketList
        (report.timelineBucket, report.timeline) = timeline()
        return report
    }

    /// Requests per minute rolled up to minutes, hours or days, by the span covered.
    private func timeline() -> (String, [SummaryReport.TimelinePoint]) {
        guard let first = perMinute.keys.min(), let last = perMinute.keys.max() else { return ("minute", []) }
        let span = last - first
        let (name, minutes): (String, Int64) =
            span <= 180 ? ("minute", 1) : span <= 7 * 24 * 60 ? ("hour", 60) : ("day", 1_440)
        var buckets: [Int64: VerdictCounts] = [:]
        for (minute, verdicts) in perMinute {
            let start = minute - ((minute % minutes) + minutes) % minutes
            buckets[start, default: VerdictCounts()].merge(verdicts)
        }
        let points = stride(from: first - ((first % minutes) + minutes) % minutes, through: last, by: Int(minutes)).map
        { start in
            SummaryReport.TimelinePoint(
                start: Date(timeIntervalSince1970: Double(start) * 60), verdicts: buckets[start]?.byName() ?? [:])
        }
        return (name, points)
    }
}

extension SummaryReport.CacheCount {
    init(name: String) { self.init(name: name, requests: 0, hits: 0, stored: 0, bytesSaved: 0) }

    /// The row of the cache tables: name, requests, hits, hit ratio, stored, bytes saved.
    var tableRow: [String] {
        [name, "\(requests)", "\(hits)", String(format: "%.1f%%", hitRatio * 100), "\(stored)", "\(bytesSaved)"]
    }

    mutating func add(_ other: Self) {
        requests += other.requests
        hits += other.hits
        stored += other.stored
        bytesSaved += other.bytesSaved
    }
}

/// A count per verdict, indexed as `Verdict.Action.allCases`.
struct VerdictCounts: Sendable {
    static let actions = Verdict.Action.allCases
    private var counts = [Int](repeating: 0, count: actions.count)

    /// The index of `action` in ``actions``.
    static func index(_ action: Verdict.Action) -> Int {
        actions.firstIndex(of: action) ?? 0
    }

    mutating func add(_ action: Verdict.Action) {
        counts[Self.index(action)] += 1
    }

    /// Adds every count of `other`.
    mutating func merge(_ other: VerdictCounts) {
        for index in counts.indices { counts[index] += other.counts[index] }
    }

    /// The sum of the counts.
    var total: Int { counts.reduce(0, +) }

    /// The counts by verdict name: those above zero, or all of them.
    func byName(includingZeros: Bool = false) -> [String: Int] {
        var names: [String: Int] = [:]
        for (action, count) in zip(Self.actions, counts) where includingZeros || count > 0 {
            names[action.rawValue] = count
        }
        return names
    }
}

/// Counts names, keeping at most `capacity` of them: beyond that the rarest half is forgotten, so
/// counts are exact while names are fewer than the capacity and approximate past it.
///
/// Names added are listed first and counted in order when the list is long, when merged into
/// another counter, or when asked for the top: a run of lines' counter then hashes no name, and
/// each name is hashed once, by the counter it is merged into.
struct TopCounter: Sendable {
    private var counts: [String: Int] = [:]
    private var pending: [String] = []
    private let capacity = 50_000

    mutating func add(_ name: String) {
        pending.append(name)
        if pending.count >= 4_096 { countPending() }
    }

    private mutating func add(_ name: String, count: Int) {
        counts[name, default: 0] += count
        if counts.count > capacity {
            let keep = counts.sorted { $0.value > $1.value }.prefix(capacity / 2)
            counts = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
        }
    }

    private mutating func countPending() {
        for name in pending { add(name, count: 1) }
        pending.removeAll(keepingCapacity: true)
    }

    /// Adds every count of `other`, as if its names had been added here after this one's.
    mutating func merge(_ other: TopCounter) {
        countPending()
        for (name, count) in other.counts { add(name, count: count) }
        for name in other.pending { add(name, count: 1) }
    }

    /// Whether no name was counted.
    var isEmpty: Bool { counts.isEmpty && pending.isEmpty }

    func top(_ count: Int) -> [SummaryReport.Count] {
        var counter = self
        counter.countPending()
        return counter.counts.sorted { ($0.value, $1.key) > ($1.value, $0.key) }.prefix(count).map {
            SummaryReport.Count(name: $0.key, count: $0.value)
        }
    }
}

/// A histogram of non-negative integers with buckets 1/32 of their value wide: fixed memory,
/// percentiles within about 3 %.
struct LogHistogram: Sendable {
    private var buckets: [Int: Int] = [:]
    private var count = 0
    private var maximum: UInt64 = 0

    private static func index(_ value: UInt64) -> Int {
        guard value >= 32 else { return Int(value) }
        let exponent = 63 - value.leadingZeroBitCount
        let mantissa = Int((value >> (exponent - 5)) & 31)
        return 32 + (exponent - 5) * 32 + mantissa
    }

    private static func lowerBound(_ index: Int) -> UInt64 {
        guard index >= 32 else { return UInt64(index) }
        let exponent = (index - 32) / 32 + 5
        return UInt64(32 + (index - 32) % 32) << (exponent - 5)
    }

    mutating func add(_ value: UInt64) {
        buckets[Self.index(value), default: 0] += 1
        count += 1
        maximum = max(maximum, value)
    }

    /// The buckets with counts, in order.
    var bucketList: [SummaryReport.HistogramBucket] {
        buckets.sorted { $0.key < $1.key }.map { SummaryReport.HistogramBucket(index: $0.key, count: $0.value) }
    }

    /// The histogram of `buckets` whose largest value was `maximum`.
    init(buckets: [SummaryReport.HistogramBucket], maximum: UInt64) {
        for bucket in buckets { self.buckets[bucket.index, default: 0] += bucket.count }
        count = buckets.reduce(0) { $0 + $1.count }
        self.maximum = maximum
    }

    init() {}

    /// Adds every value counted by `other`.
    mutating func merge(_ other: LogHistogram) {
        buckets.merge(other.buckets, uniquingKeysWith: +)
        count += other.count
        maximum = max(maximum, other.maximum)
    }

    func percentiles() -> SummaryReport.Percentiles {
        let sorted = buckets.sorted { $0.key < $1.key }
        func percentile(_ fraction: Double) -> UInt64 {
            guard count > 0 else { return 0 }
            let rank = max(1, Int((fraction * Double(count)).rounded(.up)))
            var seen = 0
            for (index, bucketCount) in sorted {
                seen += bucketCount
                if seen >= rank { return min(Self.lowerBound(index), maximum) }
            }
            return maximum
        }
        return SummaryReport.Percentiles(
            count: count, p50: percentile(0.5), p90: percentile(0.9), p99: percentile(0.99), max: maximum
        )
    }
}
