import Dispatch

/// Runs what many threads hand in, in batches, on a serial queue of its own, waking a thread only
/// when it is idle: the audit pipeline's record-keeping and the audit log's writes both go through one.
///
/// An item handed in while the worker is idle wakes its queue; after each run that found items, the
/// queue looks again `interval` later, and goes idle only when a look finds nothing new. While items
/// keep coming, ``enqueue(_:)`` therefore wakes no thread: a wake-up costs the thread that hands the
/// item in several microseconds (often the queue every URLSession shares), as much as the work it
/// hands off.
///
/// No item waits on a look alone: an item handed in when the coming look is overdue by `grace` wakes
/// the queue itself, and ``runPending()`` and ``flush(then:)`` run on demand. An item is therefore
/// never stranded by a late or lost timer. Both the looks and the clock are injectable, so the wake
/// rules are tested without sleeping.
///
/// ```swift
/// let worker = CoalescingWorker<String>(label: "lines") { lines in write(lines) }
/// worker.enqueue("one")   // wakes the queue: the worker was idle
/// worker.enqueue("two")   // waits for the next look, 2 ms after the first run
/// ```
public final class CoalescingWorker<Item: Sendable>: Sendable {
    /// Runs `look` on `queue` after `delay`.
    public typealias LookScheduler =
        @Sendable (_ queue: DispatchQueue, _ delay: DispatchTimeInterval, _ look: @escaping @Sendable () -> Void)
        -> Void

    private struct State {
        var items: [Item] = []
        /// Whether a run is coming that will see `items` (right away, or at the next look).
        var isScheduled = false
        /// The look that counts: an earlier one that arrives late finds nothing to do.
        var look: UInt64 = 0
        /// When (uptime nanoseconds) an item handed in should wake the queue because the coming run is
        /// overdue; `.max` while a run is already on its way.
        var wakeDeadline: UInt64 = .max
        /// How many times an item handed in woke the queue.
        var wakeUps = 0
    }

    private let state = Locked(State())
    /// The serial queue every batch runs on.
    private let queue: DispatchQueue
    /// How long after a run the next look comes.
    private let interval: DispatchTimeInterval
    /// Nanoseconds after a run is arranged past which an item handed in wakes the queue itself.
    private let wakeAfter: UInt64
    private let scheduleLook: LookScheduler
    /// The uptime clock in nanoseconds.
    private let now: @Sendable () -> UInt64
    private let process: @Sendable ([Item]) -> Void

    /// A worker that hands `process` the items handed in since its last run, in order, on a queue
    /// labelled `label`; it looks for new items every `interval` while they flow, and is woken by
    /// an item handed in once a look is `grace` overdue. `scheduleLook` arranges each look (a
    /// dispatch timer by default); `now` reads the uptime clock in nanoseconds.
    public init(
        label: String, interval: Duration = .milliseconds(2), grace: Duration = .milliseconds(20),
        scheduleLook: @escaping LookScheduler = { queue, delay, look in
            queue.asyncAfter(deadline: .now() + delay, execute: look)
        },
        now: @escaping @Sendable () -> UInt64 = { DispatchTime.now().uptimeNanoseconds },
        process: @escaping @Sendable ([Item]) -> Void
    ) {
        queue = DispatchQueue(label: label)
        self.interval = .nanoseconds(Int(Self.nanoseconds(interval)))
        wakeAfter = Self.nanoseconds(interval) + Self.nanoseconds(grace)
        self.scheduleLook = scheduleLook
        self.now = now
        self.process = process
    }

    /// Queues `item` to be processed after every item handed in before it; true when it woke the
    /// queue (the worker was idle, or its look was overdue).
    @discardableResult
    public func enqueue(_ item: Item) -> Bool {
        let isWaking = state.withLock { state in
            state.items.append(item)
            guard !state.isScheduled || now() > state.wakeDeadline else { return false }
            state.isScheduled = true
            state.wakeDeadline = .max
            state.wakeUps += 1
            return true
        }
        if isWaking { queue.async { self.run(look: nil) } }
        return isWaking
    }

    /// Processes the items handed in so far soon, without waiting for the next look.
    public func runPending() {
        queue.async { self.run(look: nil) }
    }

    /// Processes the items handed in so far (an empty batch when there are none), then runs `then`,
    /// both on the worker's queue.
    public func flush(then: @escaping @Sendable () -> Void) {
        queue.async {
            self.run(look: nil, evenIfEmpty: true)
            then()
        }
    }

    /// ``flush(then:)``, waiting for it: for synchronous code, never on the worker's queue.
    public func flushAndWait(then: () -> Void) {
        queue.sync {
            run(look: nil, evenIfEmpty: true)
            then()
        }
    }

    /// How many times an item handed in woke the queue.
    public var wakeUpCount: Int { state.withLock { $0.wakeUps } }

    /// Whether no run is coming: the next item handed in wakes the queue.
    public var isIdle: Bool { state.withLock { !$0.isScheduled } }

    /// Processes the items queued so far (`look`: the look this run is, nil for a wake-up), then
    /// arranges the next look if there were any.
    private func run(look: UInt64?, evenIfEmpty: Bool = false) {
        let items = state.withLock { state -> [Item] in
            if let look, look != state.look { return [] }
            // Stays scheduled while there were items: the next look.
            state.isScheduled = !state.items.isEmpty
            state.wakeDeadline = .max
            defer { state.items.removeAll(keepingCapacity: true) }
            return state.items
        }
        if items.isEmpty {
            if evenIfEmpty { process([]) }
            return
        }
        process(items)
        let next = state.withLock { state in
            state.look &+= 1
            state.wakeDeadline = now() + wakeAfter
            return state.look
        }
        scheduleLook(queue, interval) { self.run(look: next) }
    }

    /// `duration` in nanoseconds: none when negative, at most a day (a longer one never comes).
    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        return UInt64(min(seconds, 86_400)) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }
}
