import CHyperscan
import Foundation
import RequestAudit

/// The same regexes and URLs through Hyperscan (block mode, caseless, single match per pattern).
///
/// The engine is timed again here, each of its passes right after one of Hyperscan's, so the ratio
/// compares the two under the same machine conditions (a shared machine's speed drifts over the
/// minutes Hyperscan takes to compile).
struct HyperscanBenchmark {
    struct Result {
        let name: String
        let patterns: Int
        let rejected: Int
        let compileSeconds: Double
        let nanosecondsPerURL: Double
        let engineNanosecondsPerURL: Double
        let urlsWithMatch: Int
    }

    let name: String
    let patterns: [String]
    let subjects: [[UInt8]]
    let policy: Policy
    let requests: [AuditRequest]

    func run() throws -> Result {
        var kept = Array(patterns.indices)
        var rejected = 0
        var database: OpaquePointer?
        let start = now()
        while true {
            let expressions = kept.map { strdup(patterns[$0]) }
            defer { expressions.forEach { free($0) } }
            let flags = [UInt32](
                repeating: UInt32(HS_FLAG_CASELESS | HS_FLAG_SINGLEMATCH | HS_FLAG_ALLOWEMPTY), count: kept.count)
            let ids = kept.map { UInt32($0) }
            var compileError: UnsafeMutablePointer<hs_compile_error_t>?
            let status = expressions.map { UnsafePointer($0) }.withUnsafeBufferPointer { expressions in
                hs_compile_multi(
                    expressions.baseAddress, flags, ids, UInt32(kept.count), UInt32(HS_MODE_BLOCK), nil, &database,
                    &compileError)
            }
            if status == HS_SUCCESS { break }
            guard let compileError, compileError.pointee.expression >= 0 else {
                throw BenchError("Hyperscan cannot compile \(name)")
            }
            kept.remove(at: Int(compileError.pointee.expression))
            rejected += 1
            hs_free_compile_error(compileError)
        }
        let compileSeconds = Double(now() - start) / 1e9
        var scratch: OpaquePointer?
        guard hs_alloc_scratch(database, &scratch) == HS_SUCCESS else { throw BenchError("hs_alloc_scratch failed") }
        defer {
            hs_free_scratch(scratch)
            hs_free_database(database)
        }
        let onMatch: match_event_handler = { _, _, _, _, context in
            context?.assumingMemoryBound(to: Int.self).pointee += 1
            return 0
        }
        var passTimes: [Double] = []
        var enginePassTimes: [Double] = []
        var blocked = 0
        var withMatch = 0
        for pass in 0..<5 {
            let passStart = now()
            for subject in subjects {
                var matches = 0
                subject.withUnsafeBufferPointer { bytes in
                    bytes.baseAddress?.withMemoryRebound(to: CChar.self, capacity: bytes.count) { text in
                        _ = hs_scan(database, text, UInt32(bytes.count), 0, scratch, onMatch, &matches)
                    }
                }
                if pass == 0, matches > 0 { withMatch += 1 }
            }
            passTimes.append(Double(now() - passStart) / Double(subjects.count))
            let engineStart = now()
            for request in requests where policy.evaluate(request).action != .pass { blocked &+= 1 }
            enginePassTimes.append(Double(now() - engineStart) / Double(requests.count))
        }
        return Result(
            name: name, patterns: kept.count, rejected: rejected, compileSeconds: compileSeconds,
            nanosecondsPerURL: median(passTimes), engineNanosecondsPerURL: median(enginePassTimes),
            urlsWithMatch: withMatch + blocked * 0)
    }
}
