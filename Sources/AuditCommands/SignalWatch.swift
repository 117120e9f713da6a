import AuditLocking
import Dispatch
import Foundation

/// SIGHUP (reload) and SIGINT/SIGTERM (stop), delivered on a queue of their own.
///
/// `init` returns once the three signals are caught. libdispatch arms a signal source on its own
/// thread after `resume()`, and until then the signal is ignored (`SIG_IGN`, so that its default
/// action does not end the process): without the wait, a stop sent as soon as a service says it
/// listens could be lost, and the service would run on.
final class SignalWatch: @unchecked Sendable {
    // @unchecked: `sources` is set in `init` and never changed; dispatch sources are thread-safe;
    // the reload action is behind a lock.
    private let sources: [DispatchSourceSignal]
    private let stop: DispatchSemaphore
    private let reload: ReloadAction

    /// What a SIGHUP runs, set once the service can reload.
    private final class ReloadAction: Sendable {
        let action = Locked<(@Sendable () -> Void)?>(nil)
    }

    init() {
        let armed = DispatchSemaphore(value: 0)
        let queue = DispatchQueue(label: "audit.signals")
        let (stop, reload) = (DispatchSemaphore(value: 0), ReloadAction())
        (self.stop, self.reload) = (stop, reload)
        sources = [SIGINT, SIGTERM, SIGHUP].map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setRegistrationHandler { armed.signal() }
            if number == SIGHUP {
                source.setEventHandler { reload.action.withLock { $0 }?() }
            } else {
                source.setEventHandler { stop.signal() }
            }
            source.resume()
            return source
        }
        // Each source's registration handler runs once it is armed (within microseconds; the bound
        // only keeps a broken libdispatch from hanging the start).
        for _ in sources { _ = armed.wait(timeout: .now() + 10) }
    }

    /// Runs `action` on each SIGHUP from now on.
    func onReload(_ action: @escaping @Sendable () -> Void) {
        reload.action.withLock { $0 = action }
    }

    /// Returns once SIGINT or SIGTERM arrives.
    func waitForStop() async {
        let stop = stop
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            DispatchQueue.global().async {
                stop.wait()
                continuation.resume()
            }
        }
    }
}
