import AuditLocking
import Foundation

/// Threads of its own, one per core, that run the jobs given to them in the order given.
///
/// The log reader decodes on these rather than on the global dispatch queue: called from a Swift
/// concurrency thread (as `audit` runs its commands) that then waits for the results, the global
/// queue was seen decoding on one thread for the first second of a report before a second one
/// joined (`docs/design/0007-reading-logs-on-every-core.md`).
final class WorkerThreads: Sendable {
    /// The jobs not yet taken, oldest at `next`; nil tells one thread to exit.
    private struct Queue {
        var jobs: [(@Sendable () -> Void)?] = []
        var next = 0
    }

    private let queue = Locked(Queue())
    /// Signalled once per job (and once per exit request).
    private let available = DispatchSemaphore(value: 0)
    /// Signalled by each thread as it exits.
    private let exited = DispatchSemaphore(value: 0)
    /// How many threads run the jobs.
    let count: Int

    /// Starts `count` threads, which wait for jobs.
    init(count: Int = ProcessorCount.active) {
        self.count = max(1, count)
        for _ in 0..<self.count {
            let thread = Thread { [self] in work() }
            thread.name = "audit-log-reader"
            thread.start()
        }
    }

    /// Hands `job` to the next free thread.
    func run(_ job: @escaping @Sendable () -> Void) {
        enqueue(job)
    }

    /// Lets the threads finish every job given so far, then waits until they have exited.
    func finish() {
        for _ in 0..<count { enqueue(nil) }
        for _ in 0..<count { exited.wait() }
    }

    private func enqueue(_ job: (@Sendable () -> Void)?) {
        queue.withLock { $0.jobs.append(job) }
        available.signal()
    }

    private func work() {
        while true {
            available.wait()
            let job = queue.withLock { queue -> (@Sendable () -> Void)? in
                let job = queue.jobs[queue.next]
                queue.next += 1
                // Drop the taken jobs once they are the larger part, so the array stays small.
                if queue.next > 64, queue.next * 2 > queue.jobs.count {
                    queue.jobs.removeFirst(queue.next)
                    queue.next = 0
                }
                return job
            }
            guard let job else { break }
            job()
        }
        exited.signal()
    }
}
