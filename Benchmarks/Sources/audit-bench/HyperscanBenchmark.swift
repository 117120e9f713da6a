import CHyperscan
import Foundation
import HyperscanLoop
import RequestAudit

/// The same regexes and URLs through Hyperscan (block mode, caseless, single match per pattern),
/// called from C: a C function scans every subject with no Swift work per subject, and a plain C
/// program (`hyperscan-baseline`) scans them again from the same database, as an independent
/// harness would; both figures are printed.
///
/// The engine is timed again here, each of its passes right after one of Hyperscan's, so the ratio
/// compares the two under the same machine conditions (a shared machine's speed drifts over the
/// minutes Hyperscan takes to compile).
///
/// Compiling 10,000 patterns takes Hyperscan minutes, so the database is kept in
/// `.build/hyperscan-cache/`, under the patterns' hash and the Hyperscan version, with the time
/// its compilation took.
struct HyperscanBenchmark {
    struct Result {
        let name: String
        let patterns: Int
        let rejected: Int
        let compileSeconds: Double
        let isCompileCached: Bool
        /// The C function's ns/URL (median of the passes).
        let nanosecondsPerURL: Double
        /// The C program's ns/URL (median of its three passes).
        let programNanosecondsPerURL: Double
        let engineNanosecondsPerURL: Double
        let urlsWithMatch: Int
    }

    let name: String
    let patterns: [String]
    let subjects: [[UInt8]]
    let policy: Policy
    let requests: [AuditRequest]
    var passes = 5

    func run() throws -> Result {
        let (database, compiled) = try loadOrCompile()
        var scratch: OpaquePointer?
        guard hs_alloc_scratch(database.pointer, &scratch) == HS_SUCCESS else {
            throw BenchError("hs_alloc_scratch failed")
        }
        defer { hs_free_scratch(scratch) }
        var bytes: [CChar] = []
        var starts: [Int] = [0]
        for subject in subjects {
            bytes += subject.map { CChar(bitPattern: $0) }
            starts.append(bytes.count)
        }
        var passTimes: [Double] = []
        var enginePassTimes: [Double] = []
        var withMatch = 0
        var blocked = 0
        for _ in 0..<passes {
            let elapsed = hyperscan_scan_each(
                UnsafeRawPointer(database.pointer), UnsafeMutableRawPointer(scratch), bytes, starts, subjects.count,
                &withMatch)
            guard elapsed >= 0 else { throw BenchError("hs_scan failed") }
            passTimes.append(Double(elapsed) / Double(subjects.count))
            let engineStart = now()
            for request in requests where policy.evaluate(request).action != .pass { blocked &+= 1 }
            enginePassTimes.append(Double(now() - engineStart) / Double(requests.count))
        }
        return Result(
            name: name, patterns: compiled.patterns, rejected: compiled.rejected,
            compileSeconds: compiled.seconds, isCompileCached: compiled.isCached,
            nanosecondsPerURL: median(passTimes), programNanosecondsPerURL: try runProgram(database: database.path),
            engineNanosecondsPerURL: median(enginePassTimes), urlsWithMatch: withMatch + blocked * 0)
    }

    /// A compiled database and the file it is kept in.
    final class Database {
        let pointer: OpaquePointer
        let path: String
        init(pointer: OpaquePointer, path: String) {
            self.pointer = pointer
            self.path = path
        }
        deinit { hs_free_database(pointer) }
    }

    struct Compilation {
        let patterns: Int
        let rejected: Int
        let seconds: Double
        let isCached: Bool
    }

    /// The cached database of these patterns, or a new one (patterns Hyperscan rejects dropped).
    private func loadOrCompile() throws -> (Database, Compilation) {
        let version = String(cString: hs_version())
        var hasher = FNV1a()
        hasher.add(version)
        for pattern in patterns { hasher.add(pattern + "\n") }
        let folder = ".build/hyperscan-cache"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let path = "\(folder)/\(name)-\(String(hasher.value, radix: 16)).db"
        if let pointer = hyperscan_load(path),
            let record = try? String(contentsOfFile: path + ".txt", encoding: .utf8).split(separator: " "),
            record.count == 3, let kept = Int(record[0]), let rejected = Int(record[1]), let seconds = Double(record[2])
        {
            return (
                Database(pointer: OpaquePointer(pointer), path: path),
                Compilation(patterns: kept, rejected: rejected, seconds: seconds, isCached: true)
            )
        }
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
        let seconds = Double(now() - start) / 1e9
        guard let database else { throw BenchError("Hyperscan gave no database for \(name)") }
        guard hyperscan_save(UnsafeRawPointer(database), path) == 0 else { throw BenchError("cannot write \(path)") }
        try "\(kept.count) \(rejected) \(seconds)".write(toFile: path + ".txt", atomically: true, encoding: .utf8)
        return (
            Database(pointer: database, path: path),
            Compilation(patterns: kept.count, rejected: rejected, seconds: seconds, isCached: false)
        )
    }

    /// Runs `hyperscan-baseline` (built beside this program) over the subjects, written one per line.
    private func runProgram(database: String) throws -> Double {
        let subjectsPath = NSTemporaryDirectory() + "audit-bench-subjects-\(getpid()).txt"
        var text: [UInt8] = []
        for subject in subjects { text += subject + [0x0A] }
        try Data(text).write(to: URL(fileURLWithPath: subjectsPath))
        defer { try? FileManager.default.removeItem(atPath: subjectsPath) }
        let program = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("hyperscan-baseline")
        let process = Process()
        process.executableURL = program
        process.arguments = [database, subjectsPath, "3"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let fields = String(decoding: data, as: UTF8.self).split(whereSeparator: \.isWhitespace)
        guard process.terminationStatus == 0, fields.count == 3, let nanoseconds = Double(fields[0]),
            Int(fields[1]) == subjects.count
        else { throw BenchError("hyperscan-baseline failed: \(String(decoding: data, as: UTF8.self))") }
        return nanoseconds
    }
}

/// FNV-1a, 64 bits: names a cached database after its patterns.
struct FNV1a {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325
    mutating func add(_ text: String) {
        for byte in text.utf8 { value = (value ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
    }
}
