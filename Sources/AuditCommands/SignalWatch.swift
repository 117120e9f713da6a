import AuditPipeline
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

    /// With `--watch`: reloads `pipeline`'s policy when a rule file in `policies` changes, and prints
    /// each reload (an error keeps the policy in force).
    static func watch(_ pipeline: AuditPipeline, policies: String, command: String) {
        pipeline.watchPolicies(in: policies) { result in
            switch result {
            case .success(let policy):
                CommandOutput.errorLine("\(command): reloaded \(plural(policy.rules.count, "rule")) from \(policies)")
            case .failure(let error):
                CommandOutput.errorLine("\(command): \(error.description)")
            }
        }
    }

    /// On SIGHUP, reloads `pipeline`'s policy from `policies` (and its shadow policy from `shadow`);
    /// the old ones stay in force on error, which is printed.
    func onReload(of pipeline: AuditPipeline, policies: String, shadow: String?, command: String) {
        onReload {
            do throws(PipelineError) {
                let loaded = try pipeline.reloadPolicy(from: policies)
                CommandOutput.errorLine("\(command): reloaded \(plural(loaded.rules.count, "rule")) from \(policies)")
                if let shadow {
                    let reloaded = try pipeline.reloadShadowPolicy(from: shadow)
                    CommandOutput.errorLine(
                        "\(command): reloaded the shadow policy, \(plural(reloaded.rules.count, "rule")), from \(shadow)"
                    )
                }
            } catch {
                CommandOutput.errorLine("\(command): \(error.description)")
            }
        }
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
