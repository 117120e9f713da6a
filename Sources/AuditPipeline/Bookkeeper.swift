import AuditLocking
import Dispatch

/// Runs the record-keeping of requests decided where time is short (the queue every URLSession
/// shares) on a serial queue of its own, in the order it was handed in.
///
/// A job handed in while the bookkeeper is idle wakes its queue; after each run that found jobs,
/// the queue looks again `interval` later, and goes idle only when a look finds nothing new. While
/// requests keep coming, ``enqueue(_:)`` therefore wakes no thread: a wake-up costs the thread that
/// hands the job in several microseconds, as much as the record-keeping it hands off.
///
/// No job waits on a look alone: a job handed in when the coming look is overdue by `grace` wakes
/// the queue itself, and ``runPending()`` wakes it on demand (the pipeline calls it before waiting
/// for its requests). A record is therefore never stranded by a late or lost timer.
final class Bookkeeper: Sendable {
    typealias Job = @Sendable () -> Void
    /// Runs `look` on `queue` after `delay`.
    typealias LookScheduler =
        @Sendable (_ queue: DispatchQueue, _ delay: DispatchTimeInterval, _ look: @escaping Job)
        -> Void

    private struct State {
        var jobs: [Job] = []
        /// Whether a run is coming that will see `jobs` (right away, or at the next look).
        var isScheduled = false
        /// The look that counts: an earlier one that arrives late finds nothing to do.
        var look: UInt64 = 0
        /// When (uptime nanoseconds) a job handed in should wake the queue because the coming run
        /// is overdue; `.max` while a run is already on its way.
        var wakeDeadline: UInt64 = .max
    }

    private let state = Locked(State())
    private let queue = DispatchQueue(label: "RequestAudit.AuditPipeline.Bookkeeper")
    private let interval: DispatchTimeInterval
    /// Nanoseconds after a run is arranged past which a job handed in wakes the queue itself.
    private let wakeAfter: UInt64
    private let scheduleLook: LookScheduler
    /// The uptime clock in nanoseconds.
    private let now: @Sendable () -> UInt64

    /// A bookkeeper that looks for new jobs every `interval` while jobs flow, and is woken by a job
    /// handed in once a look is `grace` overdue. `scheduleLook` arranges each look (a dispatch
    /// timer by default); `now` reads the uptime clock in nanoseconds.
    init(
        interval: DispatchTimeInterval = .milliseconds(2), grace: DispatchTimeInterval = .milliseconds(20),
        scheduleLook: @escaping LookScheduler = { queue, delay, look in
            queue.asyncAfter(deadline: .now() + delay, execute: look)
        },
        now: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds }
    ) {
        self.interval = interval
        wakeAfter = Self.nanoseconds(interval) + Self.nanoseconds(grace)
        self.scheduleLook = scheduleLook
        self.now = now
    }

    /// Queues `job` to run after every job handed in before it.
    func enqueue(_ job: @escaping Job) {
        let isWaking = state.withLock { state in
            state.jobs.append(job)
            guard !state.isScheduled || now() > state.wakeDeadline else { return false }
            state.isScheduled = true
            state.wakeDeadline = .max
            return true
        }
        if isWaking { queue.async { self.run(look: nil) } }
    }

    /// Runs the jobs handed in so far soon, without waiting for the next look.
    func runPending() {
        queue.async { self.run(look: nil) }
    }

    /// Runs the jobs queued so far (`look`: the look this run is, nil for a wake-up), then arranges
    /// the next look if there were any.
    private func run(look: UInt64?) {
        let jobs = state.withLock { state -> [Job] in
            if let look, look != state.look { return [] }
            // Stays scheduled while there were jobs: the next look.
            state.isScheduled = !state.jobs.isEmpty
            state.wakeDeadline = .max
            defer { state.jobs.removeAll(keepingCapacity: true) }
            return state.jobs
        }
        guard !jobs.isEmpty else { return }
        for job in jobs { job() }
        let next = state.withLock { state in
            state.look &+= 1
            state.wakeDeadline = now() + wakeAfter
            return state.look
        }
        scheduleLook(queue, interval) { self.run(look: next) }
    }

    private static func nanoseconds(_ interval: DispatchTimeInterval) -> UInt64 {
        switch interval {
        case .seconds(let value): UInt64(max(0, value)) * 1_000_000_000
        case .milliseconds(let value): UInt64(max(0, value)) * 1_000_000
        case .microseconds(let value): UInt64(max(0, value)) * 1_000
        case .nanoseconds(let value): UInt64(max(0, value))
        default: 0
        }
    }
}
