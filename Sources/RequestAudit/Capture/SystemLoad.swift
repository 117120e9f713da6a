import AuditLocking
import AuditPolicy
import AuditReport
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Foundation's own HTTP protocol loading a caller's task from inside ``RequestInfoProtocol``, after
/// the decision, with this client between it and the caller's: every message goes on unchanged, and
/// the first that ends the load writes the record.
///
/// Two kinds of task are loaded this way:
/// - Download tasks and upload tasks keep their file or body in the task, where no protocol of ours
///   can reach it, and FoundationNetworking completes a download only for a protocol that wrote the
///   file itself. So for them the platform's protocol does the transfer, exactly as without
///   RequestAudit (progress, resume data, challenges, redirects and the caller's delegate included),
///   and RequestAudit decides, refuses or lets it go, and records what came back (outcome
///   `systemLoader`). Their redirect hops are followed by Foundation and not checked against the policy.
/// - Data tasks without a delegate (a completion handler or `async` caller), with a ``RedirectCheck``
///   lent to the task as its delegate while it loads: every redirect hop is checked against the
///   policy, and a refused hop ends the load with the refusal instead of the redirect response.
///   Nothing else differs from the task loaded without RequestAudit; the record has outcome
///   `response`, or `blocked` for a refused hop.
final class SystemLoad: NSObject, URLProtocolClient, @unchecked Sendable {
    // @unchecked: `caller` is FoundationNetworking's own client, called from the queue Foundation's
    // protocol calls this one on; the only mutable field is `progress`, a Mutex (the lent check guards
    // its own state).

    /// The audit side of a download's or upload's load.
    struct Audit: Sendable {
        let auditor: Auditor
        let decision: Auditor.Decision
        let warning: WarningResolution?

        /// Writes the record of a load that never started.
        func finishUnstarted(outcome kind: OutcomeSnapshot.Kind) {
            auditor.finish(
                decision, warning: warning,
                outcome: OutcomeSnapshot(kind: kind, durationMilliseconds: auditor.elapsedMilliseconds(since: decision))
            )
        }
    }

    /// The audit side of a data task's load with a ``RedirectCheck``: its decision's record-keeping
    /// runs on the pipeline's bookkeeping queue, off the session's work queue this load runs on.
    struct CheckedAudit: Sendable {
        let pipeline: AuditPipeline
        let decision: AuditPipeline.DeferredDecision
        /// The check of redirect hops lent to the task, taken back when the load ends.
        let redirectCheck: RedirectCheck
        /// The decided request's URL as sent (`absoluteString`), when known.
        let requestURL: String?

        /// Writes the record of a load that never started.
        func finishUnstarted(outcome kind: OutcomeSnapshot.Kind) {
            let milliseconds = decision.elapsedMilliseconds
            pipeline.finishDeferred(decision, warning: nil) { _ in
                OutcomeSnapshot(kind: kind, durationMilliseconds: milliseconds)
            }
        }
    }

    private let caller: URLProtocolClient
    private let audit: Audit?
    private let checked: CheckedAudit?
    private var redirectCheck: RedirectCheck? { checked?.redirectCheck }
    private let progress = Locked(Progress())

    /// Whether the load is recorded, and the body bytes a load with a ``RedirectCheck`` has passed
    /// on (counted as a relayed load counts them; the task's own count is a synchronous call on the
    /// session queue).
    private struct Progress {
        var isRecorded = false
        var bytes = 0
    }

    private init(caller: URLProtocolClient, audit: Audit?, checked: CheckedAudit?) {
        self.caller = caller
        self.audit = audit
        self.checked = checked
    }

    /// Foundation's HTTP protocol, made to load `task` and to report to `client` through a
    /// `SystemLoad`; nil when the platform has none.
    static func makeLoader(for task: URLSessionTask, client: URLProtocolClient, audit: Audit?) -> URLProtocol? {
        makeLoader(for: task, client: SystemLoad(caller: client, audit: audit, checked: nil))
    }

    /// Foundation's HTTP protocol, made to load data task `task` with `checked`'s ``RedirectCheck``
    /// and to report to `client` through a `SystemLoad`; nil when the platform has none. Lend the
    /// check to the task (``lend(_:to:)``) before the load starts: the load takes it back when it ends.
    static func makeLoader(for task: URLSessionTask, client: URLProtocolClient, checked: CheckedAudit) -> URLProtocol? {
        makeLoader(for: task, client: SystemLoad(caller: client, audit: nil, checked: checked))
    }

    private static func makeLoader(for task: URLSessionTask, client: SystemLoad) -> URLProtocol? {
        guard let protocolClass = PlatformInternals.httpProtocolClass else { return nil }
        return protocolClass.init(task: task, cachedResponse: nil, client: client)
    }

    /// The caller stopped the load of `task` (cancelled it): Foundation tells the caller itself.
    func stopped(_ task: URLSessionTask?) {
        returnRedirectCheck(task)
        record(kind: .cancelled, task: nil, error: URLError(.cancelled))
    }

    /// Makes `check` the delegate of `task` (which has none) until the load ends; call it on the
    /// session's work queue. False when the platform's field could not be written.
    static func lend(_ check: RedirectCheck, to task: URLSessionTask) -> Bool {
        #if canImport(FoundationNetworking)
            TaskDelegateField.set(check, of: task)
        #else
            false
        #endif
    }

    /// Takes the lent ``RedirectCheck`` back from `task`, so that FoundationNetworking sees the task as
    /// it was made (a challenge after a 401 is answered as for a task without a delegate).
    private func returnRedirectCheck(_ task: URLSessionTask?) {
        #if canImport(FoundationNetworking)
            if redirectCheck != nil, let task { TaskDelegateField.set(nil, of: task) }
        #endif
    }

    private func record(kind: OutcomeSnapshot.Kind, task: URLSessionTask?, error: Error?) {
        guard audit != nil || checked != nil else { return }
        let received = progress.withLock { progress -> Progress? in
            defer { progress.isRecorded = true }
            return progress.isRecorded ? nil : progress
        }
        guard let received else { return }
        if let checked { return recordChecked(checked, kind: kind, bytes: received.bytes, task: task, error: error) }
        guard let audit else { return }
        let auditor = audit.auditor
        let redaction = auditor.configuration.redaction
        let response = task?.response as? HTTPURLResponse
        let outcome = OutcomeSnapshot(
            kind: kind, status: response?.statusCode,
            bytes: kind == .systemLoader ? task.map { Int($0.countOfBytesReceived) } : nil,
            durationMilliseconds: auditor.elapsedMilliseconds(since: audit.decision),
            forwardedURL: task?.originalRequest?.url.map { redaction.redact(url: $0.absoluteString) },
            finalURL: response?.url.map { redaction.redact(url: $0.absoluteString) },
            error: error.map { OutcomeSnapshot.ErrorSnapshot($0, redaction: redaction) })
        auditor.finish(audit.decision, warning: audit.warning, outcome: outcome)
    }

    /// Hands the record of a checked load to the pipeline's bookkeeping queue, which builds it: only
    /// what the task holds now is read here, on the session's work queue.
    private func recordChecked(
        _ checked: CheckedAudit, kind: OutcomeSnapshot.Kind, bytes: Int, task: URLSessionTask?, error: Error?
    ) {
        // Foundation's protocol tells a caller without a delegate of its response only on the task.
        let response = kind == .blocked ? nil : task?.response as? HTTPURLResponse
        Self.recordChecked(
            pipeline: checked.pipeline, decision: checked.decision, requestURL: checked.requestURL, kind: kind,
            status: response?.statusCode, bytes: bytes, finalURL: response?.url?.absoluteString,
            redirects: checked.redirectCheck.redirects, error: error)
    }

    /// Hands the record of a data task decided on the session's work queue (and loaded here) to the
    /// pipeline's bookkeeping queue, which builds it from these plain values.
    static func recordChecked(
        pipeline: AuditPipeline, decision: AuditPipeline.DeferredDecision, requestURL: String?,
        kind: OutcomeSnapshot.Kind, status: Int?, bytes: Int, finalURL: String?, redirects: [URL], error: Error?
    ) {
        let redaction = pipeline.configuration.redaction
        let milliseconds = decision.elapsedMilliseconds
        let failure = error.map { OutcomeSnapshot.ErrorSnapshot($0, redaction: redaction) }
        pipeline.finishDeferred(decision, warning: nil) { decision in
            // A data task sent unchanged: its URL is the decided request's, redacted in its snapshot.
            let sent = decision.snapshot.url
            return OutcomeSnapshot(
                kind: kind, status: status, bytes: kind == .response ? bytes : nil,
                durationMilliseconds: milliseconds, forwardedURL: sent,
                finalURL: finalURL.map { $0 == requestURL ? sent : redaction.redact(url: $0) },
                redirects: redirects.map { redaction.redact(url: $0.absoluteString) }, error: failure)
        }
    }

    // MARK: URLProtocolClient: each message goes on unchanged

    func urlProtocol(_ protocol: URLProtocol, wasRedirectedTo request: URLRequest, redirectResponse: URLResponse) {
        caller.urlProtocol(`protocol`, wasRedirectedTo: request, redirectResponse: redirectResponse)
    }

    func urlProtocol(_ protocol: URLProtocol, cachedResponseIsValid cachedResponse: CachedURLResponse) {
        caller.urlProtocol(`protocol`, cachedResponseIsValid: cachedResponse)
    }

    // A refused hop's redirect response and body are not passed on: the load ends with the refusal.

    func urlProtocol(
        _ protocol: URLProtocol, didReceive response: URLResponse, cacheStoragePolicy policy: URLCache.StoragePolicy
    ) {
        guard redirectCheck?.refusal == nil else { return }
        if redirectCheck != nil { progress.withLock { $0.bytes = 0 } }
        caller.urlProtocol(`protocol`, didReceive: response, cacheStoragePolicy: policy)
    }

    func urlProtocol(_ protocol: URLProtocol, didLoad data: Data) {
        guard redirectCheck?.refusal == nil else { return }
        if redirectCheck != nil { progress.withLock { $0.bytes += data.count } }
        caller.urlProtocol(`protocol`, didLoad: data)
    }

    func urlProtocolDidFinishLoading(_ protocol: URLProtocol) {
        let task = `protocol`.task
        returnRedirectCheck(task)
        if let refusal = redirectCheck?.refusal {
            let error = refusal.urlError
            record(kind: .blocked, task: task, error: error)
            return caller.urlProtocol(`protocol`, didFailWithError: error)
        }
        record(kind: redirectCheck == nil ? .systemLoader : .response, task: task, error: nil)
        caller.urlProtocolDidFinishLoading(`protocol`)
    }

    func urlProtocol(_ protocol: URLProtocol, didFailWithError error: Error) {
        returnRedirectCheck(`protocol`.task)
        record(kind: .failure, task: `protocol`.task, error: error)
        caller.urlProtocol(`protocol`, didFailWithError: error)
    }

    func urlProtocol(_ protocol: URLProtocol, didReceive challenge: URLAuthenticationChallenge) {
        caller.urlProtocol(`protocol`, didReceive: challenge)
    }

    func urlProtocol(_ protocol: URLProtocol, didCancel challenge: URLAuthenticationChallenge) {
        caller.urlProtocol(`protocol`, didCancel: challenge)
    }
}
