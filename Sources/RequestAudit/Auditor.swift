import AuditCache
import AuditLocking
import AuditPipeline
import AuditPolicy
import AuditReport
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Audits every `URLSession` request of a process against a policy: one object, one call to turn on.
///
/// ```swift
/// let auditor = try Auditor(policy: Policy(directory: "policies"), configuration: {
///     var configuration = AuditorConfiguration()
///     configuration.logPath = "audit.jsonl"
///     return configuration
/// }())
/// try auditor.install()                       // URLSession.shared is audited (see install(into:))
/// Task { for await event in auditor.events() { print(event) } }
/// let (data, _) = try await URLSession.shared.data(from: URL(string: "https://example.org/")!)
/// try await auditor.shutdown()                // waits for requests in flight, flushes the log
/// ```
///
/// Only one auditor is installed at a time in a process (URLProtocol registration is global).
public final class Auditor: Sendable {
    /// The behaviour settings.
    public var configuration: AuditorConfiguration { pipeline.configuration }
    /// The policy in force now; ``reloadPolicy(from:)`` replaces it.
    ///
    /// Each request is decided by the policy in force when it starts, and keeps that policy for its
    /// redirect hops even if a reload happens while it is in flight.
    public var policy: Policy { pipeline.policy }

    /// The audit pipeline this front-end feeds: decisions, warnings, records, events, statistics,
    /// the log and reloads all happen there.
    package let pipeline: AuditPipeline

    /// Where `cache` rules keep responses (``AuditorConfiguration/cacheDirectory``), if anywhere.
    let cache: HTTPCache?
    /// Where exchanges are recorded (``AuditorConfiguration/recording`` `.record`), if anywhere.
    let recorder: HARRecorder?
    /// The recording that answers requests (``AuditorConfiguration/recording`` `.replay`), if any.
    let replay: AppReplay?
    /// Whether a recording is made or replayed: each exchange is then seen whole (upload bodies
    /// read, uploads relayed).
    var usesRecording: Bool { recorder != nil || replay != nil }

    /// Creates an auditor (not yet installed), opening the audit log and the cache folder if they
    /// are configured.
    ///
    /// - Throws: ``RequestAuditError/auditLog(_:)`` when the log cannot be opened,
    ///   ``RequestAuditError/cache(_:)`` when the cache folder cannot be used,
    ///   ``RequestAuditError/recording(_:)`` when the recording cannot be written or read.
    public init(policy: Policy, configuration: AuditorConfiguration = AuditorConfiguration()) throws(RequestAuditError)
    {
        do throws(CacheError) {
            cache = try configuration.cacheDirectory.map { directory throws(CacheError) in
                try HTTPCache(directory: directory, maximumBytes: configuration.cacheSize, isShared: false)
            }
        } catch {
            throw .cache(error.description)
        }
        if case .replay(_, _, _, let speed) = configuration.recording, !(speed >= 0 && speed.isFinite) {
            throw .recording("replay speed: expected 0 or more, got \(speed)")
        }
        do throws(RecordingError) {
            // The replay is read before the recorder opens the same file to add to it (new episodes).
            if case .replay(let path, let onMiss, let ignoring, let speed) = configuration.recording {
                let recording = try HARReplay(
                    path: path, ignoring: ignoring, redaction: configuration.redaction,
                    onMiss: onMiss)
                replay = AppReplay(recording: recording, onMiss: onMiss, speed: speed)
            } else {
                replay = nil
            }
            recorder =
                switch configuration.recording {
                case .record(let path), .replay(let path, .record, _, _):
                    try HARRecorder(
                        path: path, redaction: configuration.redaction,
                        maximumBodyBytes: configuration.recordingMaximumBodyBytes)
                case .replay, nil: nil
                }
        } catch {
            throw .recording(error.description)
        }
        do {
            pipeline = try AuditPipeline(policy: policy, configuration: configuration)
        } catch {
            throw RequestAuditError(error)
        }
    }

    /// The check of redirect hops under `policy` for a request of `caller`'s session (each hop with
    /// the headers the session adds): a refusal when a block rule matches the hop.
    func hopVerdict(_ policy: Policy, caller: CallerSession.Details) -> @Sendable (URLRequest) -> RequestAuditError? {
        { [pipeline, sessionHeaders = caller.additionalHeaders] hop in
            let request = hop.auditRequest(sessionHeaders: sessionHeaders)
            guard let verdict = pipeline.hopRefusal(request, policy: policy) else { return nil }
            return .blocked(rule: verdict.rule?.id ?? "-", message: verdict.message, url: hop.url?.absoluteString ?? "")
        }
    }

    // MARK: Reloading

    /// Loads the policy in `directory` and puts it in force, if it loads without errors.
    ///
    /// The new policy is compiled completely before it replaces the old one in a single step, so no
    /// request is ever evaluated against a half-loaded policy. Requests already in flight finish
    /// under the policy they started with. When the folder fails to load (any lint error), the
    /// previous policy stays in force, `AuditEvent.policyReloadFailed(_:)` is published, and the
    /// error is thrown.
    ///
    /// - Returns: the policy now in force.
    /// - Throws: ``RequestAuditError/policyReload(_:)`` with every problem found.
    @discardableResult
    public func reloadPolicy(from directory: String) throws(RequestAuditError) -> Policy {
        do {
            return try pipeline.reloadPolicy(from: directory)
        } catch {
            throw RequestAuditError(error)
        }
    }

    /// Reloads the policy whenever a `.rules` file under `directory` changes (checked every
    /// `interval`), until ``stopWatchingPolicies()`` or ``shutdown()``. A change that fails to load
    /// keeps the previous policy and publishes `AuditEvent.policyReloadFailed(_:)`.
    public func watchPolicies(in directory: String, every interval: Duration = .seconds(1)) {
        pipeline.watchPolicies(in: directory, every: interval)
    }

    /// Stops the watching started by ``watchPolicies(in:every:)``.
    public func stopWatchingPolicies() {
        pipeline.stopWatchingPolicies()
    }

    // MARK: Installing

    /// Intercepts `URLSession.shared` and sessions whose configuration lists no protocol classes.
    ///
    /// On Linux a session made from `URLSessionConfiguration.default` or `.ephemeral` lists
    /// Foundation's own HTTP protocol, which is asked before any registered class: such sessions are
    /// not intercepted by this call. Use ``install(into:)`` on their configuration.
    ///
    /// - Throws: ``RequestAuditError/anotherAuditorInstalled``, or
    ///   ``RequestAuditError/unsupportedPlatform(_:)`` when this Foundation lacks what interception
    ///   relies on.
    public func install() throws(RequestAuditError) {
        try activate()
        // FoundationNetworking consults registered classes in registration order and registers its
        // own HTTP protocol when the first session is made, so a plain registerClass would never be
        // asked. Put RequestInfoProtocol ahead of the built-in protocols.
        let builtIns = URLSessionConfiguration.default.protocolClasses ?? []
        for protocolClass in builtIns { URLProtocol.unregisterClass(protocolClass) }
        _ = URLProtocol.registerClass(RequestInfoProtocol.self)
        for protocolClass in builtIns { _ = URLProtocol.registerClass(protocolClass) }
    }

    /// Intercepts the sessions created from `sessionConfiguration` from now on.
    ///
    /// - Throws: ``RequestAuditError/anotherAuditorInstalled``, or
    ///   ``RequestAuditError/unsupportedPlatform(_:)`` when this Foundation lacks what interception
    ///   relies on.
    public func install(into sessionConfiguration: URLSessionConfiguration) throws(RequestAuditError) {
        try activate()
        let others = (sessionConfiguration.protocolClasses ?? []).filter { $0 != RequestInfoProtocol.self }
        sessionConfiguration.protocolClasses = [RequestInfoProtocol.self] + others
    }

    /// Stops intercepting new requests (global registration and configured sessions alike);
    /// requests in flight finish normally.
    ///
    /// Only the installed auditor uninstalls: for any other (never installed, or uninstalled
    /// already while another was installed since) this does nothing, so a late `uninstall()` of an
    /// old auditor never leaves `URLSession.shared` unaudited under the one installed now.
    public func uninstall() {
        RequestInfoProtocol.active.withLock { active in
            guard active === self else { return }
            URLProtocol.unregisterClass(RequestInfoProtocol.self)
            active = nil
        }
    }

    private func activate() throws(RequestAuditError) {
        try PlatformInternals.check(recordsUploads: usesRecording)
        try RequestInfoProtocol.active.withLock { active throws(RequestAuditError) in
            if let active, active !== self { throw .anotherAuditorInstalled }
            active = self
        }
    }

    // MARK: Observing

    /// A new subscription to the event stream, with its own buffer of `bufferSize` events.
    ///
    /// A subscriber that falls behind never slows requests: events beyond its buffer are dropped for
    /// it alone, and it then receives `AuditEvent.dropped(count:)`. The stream ends at ``shutdown()``.
    public func events(bufferSize: Int = 1_024) -> AuditEventStream {
        pipeline.events(bufferSize: bufferSize)
    }

    /// The counters so far.
    public var statistics: AuditStatistics { pipeline.statistics }

    /// Requests being audited right now: decided, and their record not yet written (which can be
    /// a few milliseconds after the caller heard back; ``shutdown()`` waits for every one).
    public var inFlightCount: Int { pipeline.inFlightCount }

    /// Uninstalls, waits for the requests in flight, writes and syncs the audit log, and ends every
    /// event stream.
    ///
    /// After it returns, every request the auditor saw has its record on disk.
    /// - Throws: ``RequestAuditError/auditLog(_:)`` if some records could not be written.
    public func shutdown() async throws(RequestAuditError) {
        uninstall()
        await pipeline.waitUntilIdle()
        do {
            try await pipeline.shutdown()
        } catch {
            throw RequestAuditError(error)
        }
    }

    // MARK: Per request (used by RequestInfoProtocol)

    /// Admits `request` of `caller`'s session to the pipeline (decided with the headers the session
    /// adds, counted, published) for a load that can carry out `capabilities`.
    func admit(_ request: URLRequest, caller: CallerSession.Details, capabilities: FrontEndCapabilities)
        -> AuditedRequest
    {
        pipeline.admit(
            request.auditRequest(sessionHeaders: caller.additionalHeaders), bodyBytes: request.httpBody?.count,
            capabilities: capabilities)
    }
}

/// How an ``Auditor`` behaves: the settings of its audit pipeline.
public typealias AuditorConfiguration = PipelineConfiguration
