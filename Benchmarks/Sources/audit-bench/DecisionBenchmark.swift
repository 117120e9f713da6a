import Foundation
import RequestAudit

/// Decisions per URL: the indexed engine against the naive loop (every rule, PCRE2-JIT, in turn)
/// over the same compiled patterns.
struct DecisionBenchmark {
    struct Result {
        let name: String
        let ruleCount: Int
        let alwaysRun: Int
        let loadSeconds: Double
        let engineNanosecondsPerURL: Double
        let p50: UInt64
        let p99: UInt64
        let naiveNanosecondsPerURL: Double
        let naiveSample: Int
        let urlCount: Int
    }

    let name: String
    let policy: Policy
    let loadSeconds: Double
    let requests: [AuditRequest]
    let naiveSample: Int
    var passes = 5

    /// Checks that engine and naive loop agree on every sampled URL, then times both.
    func run() throws -> Result {
        let sample = Array(requests.prefix(naiveSample))
        var naiveStart = now()
        var naiveVerdicts: [Verdict] = []
        naiveVerdicts.reserveCapacity(sample.count)
        naiveStart = now()
        for request in sample { naiveVerdicts.append(policy.evaluateEveryRule(request)) }
        let naiveNanoseconds = Double(now() - naiveStart) / Double(sample.count)
        for (request, expected) in zip(sample, naiveVerdicts) {
            let actual = policy.evaluate(request)
            guard Self.sameDecision(actual, expected) else {
                throw BenchError(
                    """
                    \(name): the engine and the naive loop disagree on \(request.url)
                      engine: \(actual.action) \(actual.rule?.id ?? "-") recorded \(actual.recorded.map(\.id))
                      naive:  \(expected.action) \(expected.rule?.id ?? "-") recorded \(expected.recorded.map(\.id))
                    """)
            }
        }

        var passTimes: [Double] = []
        var blocked = 0
        for _ in 0..<passes {
            let start = now()
            for request in requests where policy.evaluate(request).action != .pass { blocked &+= 1 }
            passTimes.append(Double(now() - start) / Double(requests.count))
        }
        // Each decision timed on its own, over three passes; p50 and p99 are each the median of the
        // three passes' (a slow minute on a shared machine moves one pass, not the result).
        var p50s: [UInt64] = []
        var p99s: [UInt64] = []
        var each: [UInt64] = []
        each.reserveCapacity(requests.count)
        for _ in 0..<3 {
            each.removeAll(keepingCapacity: true)
            for request in requests {
                let start = now()
                let verdict = policy.evaluate(request)
                each.append(now() - start)
                if verdict.action != .pass { blocked &+= 1 }
            }
            each.sort()
            p50s.append(percentile(each, 0.5))
            p99s.append(percentile(each, 0.99))
        }
        let stats = policy.indexStatistics
        return Result(
            name: name, ruleCount: policy.rules.count, alwaysRun: stats.alwaysRun, loadSeconds: loadSeconds,
            engineNanosecondsPerURL: median(passTimes), p50: p50s.sorted()[1], p99: p99s.sorted()[1],
            naiveNanosecondsPerURL: naiveNanoseconds, naiveSample: sample.count, urlCount: requests.count + blocked * 0)
    }

    /// Same action, same deciding rule, same recorded rules, same errors.
    static func sameDecision(_ lhs: Verdict, _ rhs: Verdict) -> Bool {
        lhs.action == rhs.action && lhs.rule?.id == rhs.rule?.id && lhs.recorded.map(\.id) == rhs.recorded.map(\.id)
            && lhs.errors.map(\.ruleID) == rhs.errors.map(\.ruleID) && lhs.redirectTarget == rhs.redirectTarget
    }
}
