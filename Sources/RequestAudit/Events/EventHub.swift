import Synchronization

/// Fans events out to subscribers, each with its own bounded buffer, without ever waiting.
///
/// A subscriber that falls behind loses events, never slows the publisher, and is told how many it
/// lost by an ``AuditEvent/dropped(count:)`` event as soon as its buffer has room again.
final class EventHub: Sendable {
    private struct Subscriber {
        let continuation: AsyncStream<AuditEvent>.Continuation
        var dropped = 0
    }

    private struct State {
        var subscribers: [Int: Subscriber] = [:]
        var nextID = 0
        var isFinished = false
    }

    private let state = Mutex(State())

    /// A new subscription whose buffer holds `bufferSize` events.
    func subscribe(bufferSize: Int) -> AsyncStream<AuditEvent> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: AuditEvent.self, bufferingPolicy: .bufferingOldest(max(1, bufferSize))
        )
        let id: Int? = state.withLock { state in
            guard !state.isFinished else { return nil }
            let id = state.nextID
            state.nextID += 1
            state.subscribers[id] = Subscriber(continuation: continuation)
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Offers `event` to every subscriber.
    func publish(_ event: AuditEvent) {
        state.withLock { state in
            for (id, var subscriber) in state.subscribers {
                if subscriber.dropped > 0,
                    case .enqueued = subscriber.continuation.yield(.dropped(count: subscriber.dropped))
                {
                    subscriber.dropped = 0
                }
                if subscriber.dropped > 0 {
                    subscriber.dropped += 1
                } else if case .dropped = subscriber.continuation.yield(event) {
                    subscriber.dropped += 1
                }
                state.subscribers[id] = subscriber
            }
        }
    }

    /// Number of current subscribers.
    var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// Ends every subscription (after a last drop notice where one is owed) and refuses new ones.
    func finish() {
        let subscribers = state.withLock { state in
            state.isFinished = true
            defer { state.subscribers.removeAll() }
            return Array(state.subscribers.values)
        }
        for subscriber in subscribers {
            if subscriber.dropped > 0 { subscriber.continuation.yield(.dropped(count: subscriber.dropped)) }
            subscriber.continuation.finish()
        }
    }
}
