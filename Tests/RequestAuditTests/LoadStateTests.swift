import Foundation
import Testing

@testable import RequestAudit

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// `LoadState`, the life of one intercepted load, driven event by event without a network.
@Suite struct LoadStateTests {
    /// A forwarded task that is never resumed (the state machine only holds it).
    static func forwardedTask() -> URLSessionDataTask {
        URLSession(configuration: .ephemeral).dataTask(with: URL(fileURLWithPath: "/dev/null"))
    }

    @Test(
        "a caller task found suspended when its forwarded task is made holds that task; the late stopLoading leaves it held, and the caller's resume resumes it"
    )
    func suspendedBeforeStopLoadingArrives() {
        var state = LoadState()
        guard case .begin = state.start() else {
            Issue.record("first start")
            return
        }
        let task = Self.forwardedTask()
        guard case .hold = state.forwarding(task, isCallerSuspended: true) else {
            Issue.record("not held")
            return
        }
        guard case .none = state.stop(isSuspending: true) else {
            Issue.record("a second suspension of a held task would outlast the caller's one resume")
            return
        }
        guard case .resumeForwarded(let resumed) = state.start() else {
            Issue.record("not resumed")
            return
        }
        #expect(resumed === task)
    }

    @Test("a running caller task's forwarded task is resumed, and suspended with it once")
    func runningThenSuspended() {
        var state = LoadState()
        _ = state.start()
        let task = Self.forwardedTask()
        guard case .resume = state.forwarding(task, isCallerSuspended: false) else {
            Issue.record("held")
            return
        }
        guard case .suspend(let suspended) = state.stop(isSuspending: true) else {
            Issue.record("not suspended")
            return
        }
        #expect(suspended === task)
        guard case .none = state.stop(isSuspending: true) else {
            Issue.record("suspended twice")
            return
        }
        guard case .resumeForwarded = state.start() else {
            Issue.record("not resumed")
            return
        }
    }

    @Test("a load suspended while it is decided holds its forwarded task until resumed")
    func suspendedWhileDeciding() {
        var state = LoadState()
        _ = state.start()
        guard case .none = state.stop(isSuspending: true) else {
            Issue.record("stop while deciding")
            return
        }
        guard case .hold = state.forwarding(Self.forwardedTask()) else {
            Issue.record("not held")
            return
        }
        guard case .resumeForwarded = state.start() else {
            Issue.record("not resumed")
            return
        }
    }

    @Test("a load stopped for good cancels its forwarded task")
    func cancelled() {
        var state = LoadState()
        _ = state.start()
        _ = state.forwarding(Self.forwardedTask())
        guard case .cancel = state.stop(isSuspending: false) else {
            Issue.record("not cancelled")
            return
        }
    }
}
