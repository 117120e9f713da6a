import AuditLocking

/// One subscriber's events: an `AsyncSequence` with its own bounded buffer.
///
/// When the buffer is full, newer events are dropped for this subscriber alone (the publisher
/// never waits) and counted; the count arrives as ``AuditEvent/dropped(count:)`` in the place where
/// the events were lost — before any later event, or at the end of the stream at the latest.
public struct AuditEventStream: AsyncSequence, Sendable {
    /// The element type.
    public typealias Element = AuditEvent

    let buffer: SubscriberBuffer

    /// An iterator over the subscriber's events.
    public struct AsyncIterator: AsyncIteratorProtocol {
        let buffer: SubscriberBuffer

        /// The next event, waiting for one; nil once the auditor has shut down and all is read.
        public mutating func next() async -> AuditEvent? {
            await buffer.next()
        }
    }

    /// Makes the iterator.
    public func makeAsyncIterator() -> AsyncIterator {
        AsyncIterator(buffer: buffer)
    }
}

/// The bounded queue behind one ``AuditEventStream``.
final class SubscriberBuffer: Sendable {
    private struct State {
        var queue: [AuditEvent] = []
        var head = 0
        var dropped = 0
        var waiter: CheckedContinuation<AuditEvent?, Never>?
        var isFinished = false

        var count: Int { queue.count - head }

        mutating func pop() -> AuditEvent? {
            guard head < queue.count else { return nil }
            defer {
                head += 1
                if head > 1_024, head * 2 > queue.count {
                    queue.removeFirst(head)
                    head = 0
                }
            }
            return queue[head]
        }

        mutating func takeDropNotice() -> AuditEvent? {
            guard dropped > 0 else { return nil }
            defer { dropped = 0 }
            return .dropped(count: dropped)
        }
    }

    let capacity: Int
    private let state = Locked(State())

    init(capacity: Int) {
        self.capacity = max(1, capacity)
    }

    /// Adds `event`, or counts it as dropped when the buffer is full (and returns false). Never
    /// waits.
    @discardableResult
    func offer(_ event: AuditEvent) -> Bool {
        var isDropped = false
        let resume: (CheckedContinuation<AuditEvent?, Never>, AuditEvent)? = state.withLock { state in
            guard !state.isFinished else { return nil }
            if let waiter = state.waiter {
                // The consumer is waiting, so the buffer is empty.
                state.waiter = nil
                if let notice = state.takeDropNotice() {
                    state.queue.append(event)
                    return (waiter, notice)
                }
                return (waiter, event)
            }
            guard state.count < capacity else {
                state.dropped += 1
                isDropped = true
                return nil
            }
            // The notice may take one place beyond the capacity so it is never lost itself.
            if let notice = state.takeDropNotice() { state.queue.append(notice) }
            state.queue.append(event)
            return nil
        }
        if let (waiter, event) = resume { waiter.resume(returning: event) }
        return !isDropped
    }

    /// The next event, waiting when there is none yet.
    func next() async -> AuditEvent? {
        await withCheckedContinuation { (continuation: CheckedContinuation<AuditEvent?, Never>) in
            let ready: AuditEvent?? = state.withLock { state in
                if let event = state.pop() { return .some(event) }
                if let notice = state.takeDropNotice() { return .some(notice) }
                if state.isFinished { return .some(nil) }
                state.waiter = continuation
                return .none
            }
            if case .some(let event) = ready { continuation.resume(returning: event) }
        }
    }

    /// Ends the stream once what is buffered (and any drop notice) has been read.
    func finish() {
        let waiter = state.withLock { state in
            state.isFinished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume(returning: nil)
    }
}
