import ArgumentParser
import Foundation
import RequestAudit
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A large download streamed to a delegate that discards each chunk: time to first byte and peak
/// RSS, direct against audited, each download in a fresh process.
struct StreamBenchmark {
    /// Bytes of the downloaded file.
    static let fileBytes = 300_000_000
    /// Downloads per session; the sessions alternate.
    static let rounds = 5

    struct Result {
        let label: String
        let firstByteNanoseconds: Double
        let peakBytes: Double
        let seconds: Double
    }

    func run() throws -> [Result] {
        let nginx = try LocalNginx()
        defer { nginx.stop() }
        let url = try nginx.addFile(named: "big.bin", bytes: Self.fileBytes)
        var samples: [String: [(Double, Double, Double)]] = [:]
        for _ in 0..<Self.rounds {
            for label in ["direct", "audited"] {
                let fields = try runSelf(
                    ["stream-one", url.absoluteString] + (label == "audited" ? ["--audited"] : [])
                )
                .split(separator: " ").compactMap { Double($0) }
                guard fields.count == 4, Int(fields[3]) == Self.fileBytes else {
                    throw BenchError("stream-one \(label) printed \(fields)")
                }
                samples[label, default: []].append((fields[0], fields[1], fields[2]))
            }
        }
        return ["direct", "audited"].map { label in
            let runs = samples[label] ?? []
            return Result(
                label: label, firstByteNanoseconds: median(runs.map(\.0)), peakBytes: median(runs.map(\.1)),
                seconds: median(runs.map(\.2)))
        }
    }

    static func printTable(_ results: [Result]) {
        print("| session | time to first byte | peak RSS | total time |")
        print("|---|---:|---:|---:|")
        for result in results {
            print(
                "| \(result.label) | \(formatNanoseconds(result.firstByteNanoseconds)) | "
                    + String(format: "%.1f MB", result.peakBytes / 1_048_576) + " | "
                    + String(format: "%.2f s", result.seconds) + " |")
        }
        guard results.count == 2 else { return }
        let (direct, audited) = (results[0], results[1])
        print(
            "\naudited vs direct: time to first byte "
                + String(format: "%.2f×", audited.firstByteNanoseconds / direct.firstByteNanoseconds)
                + String(format: " (%+.2f ms)", (audited.firstByteNanoseconds - direct.firstByteNanoseconds) / 1e6)
                + ", peak RSS " + String(format: "%.2f×", audited.peakBytes / direct.peakBytes)
                + String(format: " (%+.1f MB)", (audited.peakBytes - direct.peakBytes) / 1_048_576)
                + ", total time " + String(format: "%.2f×", audited.seconds / direct.seconds))
    }
}

/// One streamed download in this process: prints first-byte nanoseconds, peak RSS bytes, seconds
/// and bytes received.
struct StreamOne: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "stream-one", shouldDisplay: false)
    @Argument var url: String
    @Flag(help: "Through a session with RequestAudit installed (a record-everything policy, no log).")
    var audited = false

    func run() throws {
        guard let url = URL(string: url) else { throw ValidationError("not a URL: \(self.url)") }
        let configuration = URLSessionConfiguration.ephemeral
        var auditor: Auditor?
        if audited {
            auditor = try Auditor(policy: Policy(parsing: "[record]\nall .", file: "stream.rules"))
            try auditor?.install(into: configuration)
        }
        let delegate = DiscardingDelegate()
        let session = URLSession(configuration: configuration, delegate: delegate, delegateQueue: nil)
        let start = now()
        session.dataTask(with: url).resume()
        delegate.done.wait()
        let (first, bytes) = delegate.progress.withLock { ($0.first, $0.bytes) }
        print("\(first.map { $0 - start } ?? 0) \(peakResidentBytes()) \(Double(now() - start) / 1e9) \(bytes)")
        _ = auditor
    }
}

/// Counts the bytes of each chunk and drops it.
private final class DiscardingDelegate: NSObject, URLSessionDataDelegate, Sendable {
    struct Progress {
        var first: UInt64?
        var bytes = 0
    }

    let progress = Mutex(Progress())
    let done = DispatchSemaphore(value: 0)

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        progress.withLock {
            if $0.first == nil { $0.first = now() }
            $0.bytes += data.count
        }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: Error?) {
        done.signal()
    }
}
