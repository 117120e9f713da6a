import AuditLocking
import Dispatch
import Foundation
import Synchronization
import Testing

/// Jobs that ran, in the order they ran.
private final class Ran: Sendable {
    private let names = Mutex<[Int]>([])

    func job(_ name: Int) -> @Sendable () -> Void { { self.names.withLock { $0.append(name) } } }

    var all: [Int] { names.withLock { $0 } }

    /// Waits up to `seconds` for `count` jobs to have run.
    func wait(for count: Int, seconds: Double = 30) async throws -> [Int] {
        let deadline = Date().addingTimeInterval(seconds)
        while all.count < count, Date() < deadline { try await Task.sleep(for: .milliseconds(1)) }
        return all
    }
}

/// A clock the test moves by hand, so that whether a look is overdue never depends on how busy the machine is.
private final class ManualClock: Sendable {
    private let nanoseconds = Atomic<UInt64>(1_000_000_000)

    var read: @Sendable () -> UInt64 { { self.nanoseconds.load(ordering: .relaxed) } }

    func advance(by duration: Duration) {
        nanoseconds.add(UInt64(duration.components.seconds) * 1_000_000_000, ordering: .relaxed)
    }
}

/// Arranges no look at all: a timer that never fires.
private let neverLook: CoalescingWorker<Job>.LookScheduler = { _, _, _ in }

private typealias Job = @Sendable () -> Void

/// Looks arranged and kept, for the test to run by hand.
private final class KeptLooks: Sendable {
    private let looks = Mutex<[@Sendable () -> Void]>([])

    var scheduler: CoalescingWorker<Job>.LookScheduler { { _, _, look in self.looks.withLock { $0.append(look) } } }
    var first: (@Sendable () -> Void)? { looks.withLock { $0.first } }
    var last: (@Sendable () -> Void)? { looks.withLock { $0.last } }
}

/// A worker that runs the jobs handed in, as the audit pipeline's bookkeeping does.
private func jobWorker(
    grace: Duration = .milliseconds(20), scheduleLook: CoalescingWorker<Job>.LookScheduler? = nil,
    now: (@Sendable () -> UInt64)? = nil
) -> CoalescingWorker<Job> {
    let run: @Sendable ([Job]) -> Void = { jobs in for job in jobs { job() } }
    guard let scheduleLook, let now else { return CoalescingWorker(label: "test", grace: grace, process: run) }
    return CoalescingWorker(label: "test", grace: grace, scheduleLook: scheduleLook, now: now, process: run)
}

/// Hands `worker` job 1, which wakes it and runs, then job 2, which waits for the next look: 50 ms
/// later only job 1 has run.
private func runOneHoldOne(_ worker: CoalescingWorker<Job>, _ ran: Ran) async throws {
    worker.enqueue(ran.job(1))
    #expect(try await ran.wait(for: 1) == [1])
    worker.enqueue(ran.job(2))
    try await Task.sleep(for: .milliseconds(50))
    #expect(ran.all == [1])
}

@Suite struct CoalescingWorkerTests {
    @Test("jobs handed in from several threads all run, each once, in the order each thread handed them in")
    func everyJobRunsInOrder() async throws {
        let worker = jobWorker()
        let ran = Ran()
        await withTaskGroup(of: Void.self) { group in
            for thread in 0..<4 {
                group.addTask {
                    for index in 0..<5_000 {
                        worker.enqueue(ran.job(thread * 100_000 + index))
                        if index % 500 == 0 { try? await Task.sleep(for: .milliseconds(3)) }
                    }
                }
            }
        }
        let all = try await ran.wait(for: 20_000)
        #expect(all.count == 20_000)
        for thread in 0..<4 {
            let mine = all.filter { $0 / 100_000 == thread }
            #expect(mine == (0..<5_000).map { thread * 100_000 + $0 })
        }
    }

    @Test("a job handed in while jobs flow waits for the next look, not for a wake-up")
    func jobsWaitForTheLook() async throws {
        let looks = KeptLooks()
        let worker = jobWorker(scheduleLook: looks.scheduler, now: ManualClock().read)
        let ran = Ran()
        try await runOneHoldOne(worker, ran)
        let look = try #require(looks.last)
        look()
        #expect(ran.all == [1, 2])
    }

    @Test("when a look never comes, the next job handed in after the grace runs the jobs waiting for it")
    func lostLookIsRecovered() async throws {
        let clock = ManualClock()
        let worker = jobWorker(grace: .milliseconds(20), scheduleLook: neverLook, now: clock.read)
        let ran = Ran()
        try await runOneHoldOne(worker, ran)
        clock.advance(by: .seconds(1))
        worker.enqueue(ran.job(3))
        #expect(try await ran.wait(for: 3) == [1, 2, 3])
    }

    @Test("runPending runs the jobs waiting for a look that never comes")
    func runPendingRunsWaitingJobs() async throws {
        let worker = jobWorker(scheduleLook: neverLook, now: ManualClock().read)
        let ran = Ran()
        try await runOneHoldOne(worker, ran)
        worker.runPending()
        #expect(try await ran.wait(for: 2) == [1, 2])
    }

    @Test("a look that arrives after a wake-up ran its jobs finds nothing to run twice")
    func lateLookRunsNothingTwice() async throws {
        let looks = KeptLooks()
        let worker = jobWorker(scheduleLook: looks.scheduler, now: ManualClock().read)
        let ran = Ran()
        worker.enqueue(ran.job(1))
        _ = try await ran.wait(for: 1)
        worker.enqueue(ran.job(2))
        worker.runPending()
        _ = try await ran.wait(for: 2)
        let first = try #require(looks.first)
        worker.enqueue(ran.job(3))
        first()
        try await Task.sleep(for: .milliseconds(30))
        #expect(ran.all == [1, 2])
        worker.runPending()
        #expect(try await ran.wait(for: 3) == [1, 2, 3])
    }
}
