import Synchronization

/// The bound on checks in flight: a check beyond it is shed (answered 503 at once) instead of
/// waiting in a queue without end while the gateway's clients time out.
public final class CheckGate: Sendable {
    /// The most checks in flight at once.
    public let limit: Int
    private let inFlight = Atomic<Int>(0)
    private let shedTotal = Atomic<Int>(0)

    /// A gate that lets `limit` checks in at once.
    public init(limit: Int) { self.limit = max(1, limit) }

    /// Lets a check in, or says it is shed; a check let in must ``leave()``.
    public func enter() -> Bool {
        let (_, entered) = inFlight.wrappingAdd(1, ordering: .acquiringAndReleasing)
        guard entered > limit else { return true }
        inFlight.wrappingSubtract(1, ordering: .acquiringAndReleasing)
        shedTotal.wrappingAdd(1, ordering: .relaxed)
        return false
    }

    /// A check let in is answered.
    public func leave() { inFlight.wrappingSubtract(1, ordering: .acquiringAndReleasing) }

    /// Checks in flight now.
    public var count: Int { inFlight.load(ordering: .acquiring) }

    /// Checks shed since the gate was made.
    public var shed: Int { shedTotal.load(ordering: .relaxed) }
}
