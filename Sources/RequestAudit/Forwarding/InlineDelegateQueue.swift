import AuditLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The forwarding session's delegate queue: runs each delegate call right where FoundationNetworking
/// makes it, on the session's work queue, instead of queueing it.
///
/// FoundationNetworking reads a response body in one long run of work on its work queue and adds a
/// delegate operation for every chunk. Queued behind that run, the operations would only start once
/// the whole body had been read, so the whole body would sit in memory. Run in place, each chunk goes
/// on to the caller's task before the next one is read: the transfer waits for the relay just as it
/// waits for the caller's own delegate queue when it loads directly, and memory stays as bounded as
/// it does directly.
///
/// A call made from any other thread (a task cancelled from the caller's thread, say) goes to the
/// work queue, after what is already there.
final class InlineDelegateQueue: OperationQueue, @unchecked Sendable {
    // @unchecked: OperationQueue is thread-safe; the one field of ours is in a Mutex.

    /// Marks the work queue this queue runs delegate calls on.
    private static let workQueueKey = DispatchSpecificKey<ObjectIdentifier>()

    /// The session's work queue, known once the session exists (`attach(to:)`).
    private let workQueue = Locked<DispatchQueue?>(nil)

    override init() {
        super.init()
        name = "RequestAudit.Forwarder"
        maxConcurrentOperationCount = 1
    }

    /// Runs delegate calls in place on `queue`, the work queue of the session this is the delegate
    /// queue of. Call before the session starts a task.
    func attach(to queue: DispatchQueue) {
        // OperationQueue holds its underlying queue unowned: `workQueue` keeps it.
        workQueue.withLock { $0 = queue }
        unsafe underlyingQueue = queue
        queue.setSpecific(key: Self.workQueueKey, value: ObjectIdentifier(self))
    }

    /// Whether the caller runs on the attached work queue (not on another session's).
    private var isOnWorkQueue: Bool {
        DispatchQueue.getSpecific(key: Self.workQueueKey) == ObjectIdentifier(self)
    }

    override func addOperation(_ block: @escaping @Sendable () -> Void) {
        if isOnWorkQueue { return block() }
        guard let queue = workQueue.withLock({ $0 }) else { return super.addOperation(block) }
        queue.async(execute: block)
    }
}
