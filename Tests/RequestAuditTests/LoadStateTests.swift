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

    /// An action in words, `task` named as `forwarded` when the action carries it.
    static func shown(_ action: LoadState.StartAction, _ task: URLSessionDataTask) -> String {
        switch action {
        case .begin: "begin"
        case .resume: "resume system load"
        case .resumeForwarded(let resumed): resumed === task ? "resume forwarded" : "resume another task"
        case .endHeld: "end held"
        case .ignore: "ignore"
        }
    }

    static func shown(_ action: LoadState.StopAction, _ task: URLSessionDataTask) -> String {
        switch action {
        case .none: "none"
        case .cancel(let cancelled, let heldEnd):
            (cancelled === task ? "cancel forwarded" : "cancel another task") + (heldEnd == nil ? "" : ", end held")
        case .suspend(let suspended): suspended === task ? "suspend forwarded" : "suspend another task"
        case .stopSystemLoader: "stop system load"
        case .cancelResponse: "cancel response"
        }
    }

    static func shown(_ action: LoadState.ForwardingAction) -> String {
        switch action {
        case .resume: "resume"
        case .hold: "hold"
        case .cancel: "cancel"
        }
    }

    @Test(
        "a caller task found suspended when its forwarded task is made holds that task; the late stopLoading leaves it held, and the caller's resume resumes it"
    )
    func suspendedBeforeStopLoadingArrives() {
        var state = LoadState()
        let task = Self.forwardedTask()
        #expect(Self.shown(state.start(), task) == "begin")
        #expect(Self.shown(state.forwarding(task, isCallerSuspended: true)) == "hold")
        // A second suspension of a held task would outlast the caller's one resume.
        #expect(Self.shown(state.stop(isSuspending: true), task) == "none")
        #expect(Self.shown(state.start(), task) == "resume forwarded")
    }

    @Test("a running caller task's forwarded task is resumed, and suspended with it once")
    func runningThenSuspended() {
        var state = LoadState()
        let task = Self.forwardedTask()
        _ = state.start()
        #expect(Self.shown(state.forwarding(task, isCallerSuspended: false)) == "resume")
        #expect(Self.shown(state.stop(isSuspending: true), task) == "suspend forwarded")
        #expect(Self.shown(state.stop(isSuspending: true), task) == "none")
        #expect(Self.shown(state.start(), task) == "resume forwarded")
    }

    @Test("a load suspended while it is decided holds its forwarded task until resumed")
    func suspendedWhileDeciding() {
        var state = LoadState()
        let task = Self.forwardedTask()
        _ = state.start()
        #expect(Self.shown(state.stop(isSuspending: true), task) == "none")
        #expect(Self.shown(state.forwarding(task)) == "hold")
        #expect(Self.shown(state.start(), task) == "resume forwarded")
    }

    @Test("a load stopped for good cancels its forwarded task")
    func cancelled() {
        let (running, task) = Self.forwardingRunning()
        var state = running
        #expect(Self.shown(state.stop(isSuspending: false), task) == "cancel forwarded")
    }

    /// A load whose forwarded task runs, its caller's task then suspended.
    static func forwardingSuspended() -> (LoadState, URLSessionDataTask) {
        let (running, task) = forwardingRunning()
        var state = running
        _ = state.stop(isSuspending: true)
        return (state, task)
    }

    /// A load whose forwarded task runs, the caller waiting.
    static func forwardingRunning() -> (LoadState, URLSessionDataTask) {
        var state = LoadState()
        let task = forwardedTask()
        _ = state.start()
        _ = state.forwarding(task)
        return (state, task)
    }

    /// A forwarded load whose caller's task is suspended, and whose end arrived meanwhile (held).
    static func endedWhileSuspended() -> (LoadState, URLSessionDataTask) {
        let (suspended, task) = forwardingSuspended()
        var state = suspended
        let isHeld = state.holdEnd {}
        #expect(isHeld)
        return (state, task)
    }

    @Test("a forwarded load that ends while its caller's task is suspended ends when the caller resumes it")
    func endedWhileSuspended() {
        let (held, task) = Self.endedWhileSuspended()
        var state = held
        #expect(Self.shown(state.start(), task) == "end held")
        let isDelivered = state.finish()
        #expect(isDelivered)
    }

    @Test("a forwarded load that ends while its caller's task is suspended, then cancelled, ends as stopped")
    func endedWhileSuspendedThenCancelled() {
        let (held, task) = Self.endedWhileSuspended()
        var state = held
        #expect(Self.shown(state.stop(isSuspending: false), task) == "cancel forwarded, end held")
        let isDelivered = state.finish()
        #expect(!isDelivered)
    }

    @Test("a forwarded load that ends while its caller waits ends at once")
    func endedWhileRunning() {
        var (state, _) = Self.forwardingRunning()
        let isHeld = state.holdEnd {}
        let isDelivered = state.finish()
        #expect(!isHeld && isDelivered)
    }

    /// Foundation's own protocol, as a system load holds it (never started).
    static func systemLoader() -> URLProtocol {
        URLProtocol(request: URLRequest(url: URL(fileURLWithPath: "/dev/null")), cachedResponse: nil, client: nil)
    }

    @Test("a system load is paused by a suspension, resumed by the caller's resume, and stopped by a cancellation")
    func systemLoadSuspendedAndCancelled() {
        var state = LoadState()
        let task = Self.forwardedTask()
        _ = state.start()
        let isLoading = state.loadingBySystem(Self.systemLoader())
        #expect(isLoading)
        #expect(Self.shown(state.stop(isSuspending: true), task) == "stop system load")
        #expect(Self.shown(state.start(), task) == "resume system load")
        #expect(Self.shown(state.stop(isSuspending: false), task) == "stop system load")
        #expect(Self.shown(state.start(), task) == "ignore")
    }

    @Test(
        "a stop that comes after a system load ended does not reach Foundation's protocol, which traps for a task neither suspended nor failed"
    )
    func systemLoadEndedBeforeStop() {
        var state = LoadState()
        let task = Self.forwardedTask()
        _ = state.start()
        let isLoading = state.loadingBySystem(Self.systemLoader())
        let isDelivered = state.finish()
        #expect(isLoading && isDelivered)
        #expect(Self.shown(state.stop(isSuspending: true), task) == "none")
        #expect(Self.shown(state.stop(isSuspending: false), task) == "none")
        #expect(Self.shown(state.start(), task) == "ignore")
    }
}
