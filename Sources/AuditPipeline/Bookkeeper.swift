import AuditLocking
import Dispatch

/// Runs the record-keeping of requests decided where time is short (the queue every URLSession
/// shares) on a serial queue of its own, in the order it was handed in.
///
/// A job handed in while the bookkeeper is idle wakes its queue; after each run the queue looks
/// again every `interval`, and goes idle only when a look finds nothing new. While requests keep
/// coming, ``enqueue(_:)`` therefore wakes no thread: a wake-up costs the thread that hands the job
/// in several microseconds, as much as the record-keeping it hands off.
final class Bookkeeper: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        /// Whether the queue has a run coming that will see `jobs` (right away, or at the ticker's
        /// next look).
        var isScheduled = false
    }

    /// The ticker that looks again while jobs flow; touched only on `queue`.
    private final class Ticker: @unchecked Sendable {
        // @unchecked: only the serial `queue` reads or writes `isRunning` and calls the source.
        let source: DispatchSourceTimer
        var isRunning = false

        init(source: DispatchSourceTimer) { self.source = source }
    }

    private let state = Locked(State())
    private let queue = DispatchQueue(label: "RequestAudit.AuditPipeline.Bookkeeper")
    private let ticker: Ticker
    private let interval: DispatchTimeInterval

    /// A bookkeeper that looks for new jobs every `interval` while jobs flow.
    init(interval: DispatchTimeInterval = .milliseconds(2)) {
        self.interval = interval
        ticker = Ticker(source: DispatchSource.makeTimerSource(queue: queue))
        ticker.source.setEventHandler { [weak self] in self?.run() }
    }

    deinit {
        // A suspended source must not be released: resume it (its handler finds no bookkeeper), then cancel.
        if !ticker.isRunning { ticker.source.resume() }
        ticker.source.cancel()
    }

    /// Queues `job` to run after every job handed in before it.
    func enqueue(_ job: @escaping @Sendable () -> Void) {
        let isWaking = state.withLock { state in
            state.jobs.append(job)
            guard !state.isScheduled else { return false }
            state.isScheduled = true
            return true
        }
        if isWaking { queue.async { self.run() } }
    }

    /// Runs the jobs queued so far, and starts or stops the ticker by whether there were any.
    private func run() {
        let jobs = state.withLock { state in
            // Stays scheduled while there were jobs: the ticker's next look.
            state.isScheduled = !state.jobs.isEmpty
            defer { state.jobs.removeAll(keepingCapacity: true) }
            return state.jobs
        }
        if jobs.isEmpty, ticker.isRunning {
            ticker.source.suspend()
            ticker.isRunning = false
        } else if !jobs.isEmpty, !ticker.isRunning {
            ticker.source.schedule(deadline: .now() + interval, repeating: interval, leeway: .microseconds(500))
            ticker.source.resume()
            ticker.isRunning = true
        }
        for job in jobs { job() }
    }
}
