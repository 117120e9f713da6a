import Foundation

/// Combines per-machine summaries (`summary.json` files) into one fleet summary, without the logs.
///
/// Counts add up exactly: totals, verdicts, categories, rules, recorded hits, outcomes, errors,
/// the timeline (put on the coarsest bucket of the inputs). Decision-time percentiles come from the
/// merged histograms, so they are what one summary of every log would give (summaries without a
/// histogram make them an upper bound, the largest of the inputs). Top lists (hosts, redirects)
/// are approximate: a name below one machine's top list counts 0 there, so each merged count
/// carries an ``SummaryReport/Count/errorBound``, the sum of the smallest listed counts of the
/// summaries that did not list it.
public enum SummaryMerger {
    /// A summary as `summary.json` holds it.
    ///
    /// - Throws: ``AuditLogError/invalidSummary(path:reason:)`` when `data` is not one.
    public static func summary(from data: Data, path: String) throws(AuditLogError) -> SummaryReport {
        do {
            return try AuditLogCoding.decoder().decode(SummaryReport.self, from: data)
        } catch {
            throw .invalidSummary(path: path, reason: AuditLogReader.describe(error, in: data))
        }
    }

    /// The summary of all of `summaries`.
    public static func merge(_ summaries: [SummaryReport]) -> SummaryReport {
        var merged = SummaryReport()
        merged.logs = summaries.flatMap(\.logs)
        merged.since = summaries.allSatisfy { $0.since == summaries.first?.since } ? summaries.first?.since : nil
        merged.until = summaries.allSatisfy { $0.until == summaries.first?.until } ? summaries.first?.until : nil
        merged.firstRequest = summaries.compactMap(\.firstRequest).min()
        merged.lastRequest = summaries.compactMap(\.lastRequest).max()
        merged.totalRequests = summaries.reduce(0) { $0 + $1.totalRequests }
        merged.verdicts = sum(summaries.map(\.verdicts))
        merged.categories = mergeCategories(summaries)
        merged.rules = mergeRules(summaries)
        let withPolicy = summaries.compactMap(\.rulesWithoutHits)
        if !withPolicy.isEmpty {
            let hit = Set(merged.rules.filter { $0.decided + $0.recorded > 0 }.map(\.rule))
            merged.rulesWithoutHits = Array(Set(withPolicy.flatMap { $0 }).subtracting(hit)).sorted()
        }
        merged.topHostsByVerdict = mergeTopLists(summaries.map(\.topHostsByVerdict))
        merged.topHostsByCategory = mergeTopLists(summaries.map(\.topHostsByCategory))
        merged.redirects = mergeRedirects(summaries)
        merged.recordedByRule = sum(summaries.map(\.recordedByRule))
        merged.recordedByCategory = sum(summaries.map(\.recordedByCategory))
        mergeShadow(summaries, into: &merged)
        (merged.timelineBucket, merged.timeline) = mergeTimelines(summaries)
        mergeDecisionTimes(summaries, into: &merged)
        merged.outcomes = sum(summaries.map(\.outcomes))
        merged.cacheByRule = mergeCache(summaries.compactMap(\.cacheByRule), limit: nil)
        merged.cacheByHost = mergeCache(summaries.compactMap(\.cacheByHost), limit: SummaryBuilder.topCount)
        merged.errors = mergeErrors(summaries)
        merged.requestsWithMatchErrors = summaries.reduce(0) { $0 + $1.requestsWithMatchErrors }
        merged.matchErrorsByRule = sum(summaries.map(\.matchErrorsByRule))
        merged.skippedLines = summaries.reduce(0) { $0 + $1.skippedLines }
        merged.tornLines = summaries.reduce(0) { $0 + $1.tornLines }
        merged.skippedExamples = Array(summaries.flatMap(\.skippedExamples).prefix(10))
        return merged
    }

    /// The cache counts of every summary added up by name, most requests first; nil when none has any.
    private static func mergeCache(_ lists: [[SummaryReport.CacheCount]], limit: Int?) -> [SummaryReport.CacheCount]? {
        guard !lists.isEmpty else { return nil }
        var byName: [String: SummaryReport.CacheCount] = [:]
        for count in lists.joined() { byName[count.name, default: .init(name: count.name)].add(count) }
        let sorted = byName.values.sorted { ($0.requests, $1.name) > ($1.requests, $0.name) }
        return limit.map { Array(sorted.prefix($0)) } ?? sorted
    }

    private static func sum(_ dictionaries: [[String: Int]]) -> [String: Int] {
        dictionaries.reduce(into: [:]) { total, next in total.merge(next, uniquingKeysWith: +) }
    }

    private static func mergeCategories(_ summaries: [SummaryReport]) -> [SummaryReport.CategoryCount] {
        var byCategory: [String: SummaryReport.CategoryCount] = [:]
        for category in summaries.flatMap(\.categories) {
            var entry = byCategory[category.category] ?? .init(category: category.category, total: 0, verdicts: [:])
            entry.total += category.total
            entry.verdicts.merge(category.verdicts, uniquingKeysWith: +)
            byCategory[category.category] = entry
        }
        return byCategory.values.sorted { ($0.total, $1.category) > ($1.total, $0.category) }
    }

    private static func mergeRules(_ summaries: [SummaryReport]) -> [SummaryReport.RuleHits] {
        var byRule: [String: SummaryReport.RuleHits] = [:]
        for hits in summaries.flatMap(\.rules) {
            var entry = byRule[hits.rule] ?? .init(rule: hits.rule, decided: 0, recorded: 0)
            entry.decided += hits.decided
            entry.recorded += hits.recorded
            byRule[hits.rule] = entry
        }
        return byRule.values.sorted { ($0.decided + $0.recorded, $1.rule) > ($1.decided + $1.recorded, $0.rule) }
    }

    /// Merges top lists keyed alike (per verdict, per category), each with error bounds.
    private static func mergeTopLists(_ lists: [[String: [SummaryReport.Count]]]) -> [String: [SummaryReport.Count]] {
        let keys = Set(lists.flatMap(\.keys))
        return Dictionary(uniqueKeysWithValues: keys.map { key in (key, mergeTop(lists.map { $0[key] ?? [] })) })
    }

    /// One merged top list: counts summed; a name missing from a full list may have had up to that
    /// list's smallest count there.
    public static func mergeTop(_ lists: [[SummaryReport.Count]]) -> [SummaryReport.Count] {
        var merged: [String: SummaryReport.Count] = [:]
        for list in lists {
            for entry in list {
                var total = merged[entry.name] ?? .init(name: entry.name, count: 0)
                total.count += entry.count
                if let bound = entry.errorBound { total.errorBound = (total.errorBound ?? 0) + bound }
                merged[entry.name] = total
            }
        }
        for list in lists where list.count >= SummaryBuilder.topCount {
            let floor = list.map(\.count).min() ?? 0
            let listed = Set(list.map(\.name))
            for name in Array(merged.keys) where !listed.contains(name) {
                let bound = merged[name]?.errorBound ?? 0
                merged[name]?.errorBound = bound + floor
            }
        }
        return merged.values.sorted { ($0.count, $1.name) > ($1.count, $0.name) }.prefix(SummaryBuilder.topCount)
            .map { $0 }
    }

    private static func mergeRedirects(_ summaries: [SummaryReport]) -> [SummaryReport.RedirectPair] {
        var counts: [String: SummaryReport.RedirectPair] = [:]
        for pair in summaries.flatMap(\.redirects) {
            let key = pair.from + "\u{1F}" + pair.to
            counts[key, default: .init(from: pair.from, to: pair.to, count: 0)].count += pair.count
        }
        return counts.values.sorted { ($0.count, $1.from, $1.to) > ($1.count, $0.from, $0.to) }
            .prefix(SummaryBuilder.topCount).map { $0 }
    }

    private static func mergeShadow(_ summaries: [SummaryReport], into merged: inout SummaryReport) {
        let all = summaries.compactMap(\.shadowDifferences).flatMap { $0 }
        guard !all.isEmpty else { return }
        var counts: [String: SummaryReport.ShadowDifference] = [:]
        for difference in all {
            let key = [difference.live, difference.shadow, difference.rule ?? ""].joined(separator: "\u{1F}")
            counts[
                key, default: .init(live: difference.live, shadow: difference.shadow, rule: difference.rule, count: 0)
            ]
            .count += difference.count
        }
        merged.shadowDifferences = counts.values.sorted {
            ($0.count, $1.live, $1.shadow, $1.rule ?? "") > ($1.count, $0.live, $0.shadow, $0.rule ?? "")
        }
    }

    private static func mergeErrors(_ summaries: [SummaryReport]) -> [SummaryReport.ErrorCount] {
        var byKey: [String: SummaryReport.ErrorCount] = [:]
        for error in summaries.flatMap(\.errors) {
            let key = "\(error.domain)\u{1F}\(error.code)"
            if byKey[key] == nil { byKey[key] = error } else { byKey[key]?.count += error.count }
        }
        return byKey.values.sorted { ($0.count, $1.domain, $1.code) > ($1.count, $0.domain, $0.code) }
    }

    /// The timelines on the coarsest bucket any input used.
    private static func mergeTimelines(_ summaries: [SummaryReport]) -> (String, [SummaryReport.TimelinePoint]) {
        let order = ["minute": 60.0, "hour": 3_600.0, "day": 86_400.0]
        let bucket = summaries.map(\.timelineBucket).max { (order[$0] ?? 60) < (order[$1] ?? 60) } ?? "minute"
        let width = order[bucket] ?? 60
        var points: [Date: [String: Int]] = [:]
        for point in summaries.flatMap(\.timeline) {
            let seconds = point.start.timeIntervalSince1970
            let start = Date(timeIntervalSince1970: (seconds / width).rounded(.down) * width)
            points[start, default: [:]].merge(point.verdicts, uniquingKeysWith: +)
        }
        return (bucket, points.keys.sorted().map { .init(start: $0, verdicts: points[$0] ?? [:]) })
    }

    private static func mergeDecisionTimes(_ summaries: [SummaryReport], into merged: inout SummaryReport) {
        let maximum = summaries.map(\.decisionTime.max).max() ?? 0
        let histograms = summaries.filter { $0.decisionTime.count > 0 }.map(\.decisionTimeHistogram)
        if histograms.allSatisfy({ $0 != nil }) {
            let histogram = LogHistogram(buckets: histograms.flatMap { $0 ?? [] }, maximum: maximum)
            merged.decisionTime = histogram.percentiles()
            merged.decisionTimeHistogram = histogram.bucketList
        } else {
            merged.decisionTime = SummaryReport.Percentiles(
                count: summaries.reduce(0) { $0 + $1.decisionTime.count },
                p50: summaries.map(\.decisionTime.p50).max() ?? 0, p90: summaries.map(\.decisionTime.p90).max() ?? 0,
                p99: summaries.map(\.decisionTime.p99).max() ?? 0, max: maximum)
        }
    }
}
