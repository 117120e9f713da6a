import AuditLocking

/// Fans events out to subscribers, each with its own bounded buffer, without ever waiting.
final class EventHub: Sendable {
    private struct Subscriber {
        weak var buffer: SubscriberBuffer?
    }

    private struct State {
        var subscribers: [Subscriber] = []
        var isFinished = false
    }

    private let state = Locked(State())

    /// A new subscription whose buffer holds `bufferSize` events. A subscription that is no longer
    /// referenced is forgotten.
    func subscribe(bufferSize: Int) -> AuditEventStream {
        let buffer = SubscriberBuffer(capacity: bufferSize)
        let isFinished = state.withLock { state in
            if !state.isFinished { state.subscribers.append(Subscriber(buffer: buffer)) }
            return state.isFinished
        }
        if isFinished { buffer.finish() }
        return AuditEventStream(buffer: buffer)
    }

    /// Offers `event` to every subscriber; returns how many dropped it (their buffers were full).
    @discardableResult
    func publish(_ event: AuditEvent) -> Int {
        let buffers = state.withLock { state in
            state.subscribers.removeAll { $0.buffer == nil }
            return state.subscribers.compactMap(\.buffer)
        }
        return buffers.reduce(0) { dropped, buffer in dropped + (buffer.offer(event) ? 0 : 1) }
    }

    /// Ends every subscription and refuses new ones.
    func finish() {
        let buffers = state.withLock { state in
            state.isFinished = true
            defer { state.subscribers.removeAll() }
            return state.subscribers.compactMap(\.buffer)
        }
        for buffer in buffers { buffer.finish() }
    }
}
