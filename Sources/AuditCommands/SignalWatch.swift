import Dispatch
import Foundation

/// SIGHUP (reload) and SIGINT/SIGTERM (stop), delivered on a queue of their own.
final class SignalWatch: @unchecked Sendable {
    // @unchecked: `sources` is set in `init` and never changed; dispatch sources are thread-safe.
    private let queue = DispatchQueue(label: "audit.signals")
    private let sources: [DispatchSourceSignal]
    private let stop = DispatchSemaphore(value: 0)

    init() {
        var sources: [DispatchSourceSignal] = []
        for number in [SIGINT, SIGTERM, SIGHUP] {
            signal(number, SIG_IGN)
            sources.append(DispatchSource.makeSignalSource(signal: number, queue: queue))
        }
        self.sources = sources
        let stop = stop
        for source in sources.prefix(2) {
            source.setEventHandler { stop.signal() }
            source.resume()
        }
    }

    func onReload(_ reload: @escaping @Sendable () -> Void) {
        sources[2].setEventHandler(handler: reload)
        sources[2].resume()
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
