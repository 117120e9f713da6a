import AuditPolicy
import AuditReport
import CoreMetrics

/// How an audit pipeline behaves, whichever front-end feeds it (the in-app `Auditor`, `audit proxy`,
/// `audit replay`).
public struct PipelineConfiguration: Sendable {
    /// Decides whether a request with a `warn` verdict goes on. Called off the network path; it may
    /// take as long as ``warningTimeout``.
    public typealias WarningHandler = @Sendable (AuditWarning) async -> WarningResolution.Decision

    /// Where to append the JSON Lines audit log; nil keeps no log.
    public var logPath: String?
    /// When the log rotates, and how many rotated files it keeps (each deletion is noted in the log).
    public var logRotation: LogRotation = .default
    /// The HMAC key of the log's hash chain; nil seals lines with plain SHA-256 (see `LogChain`).
    public var logChainKey: [UInt8]?
    /// What a failing match or invalid redirect does (fail closed by default).
    public var onMatchError: MatchErrorHandling = .block
    /// The host's warning handler; nil applies ``defaultWarningDecision`` at once.
    public var warningHandler: WarningHandler?
    /// How long the handler may take before ``defaultWarningDecision`` applies.
    public var warningTimeout: Duration = .seconds(30)
    /// The decision when there is no handler, or it times out.
    public var defaultWarningDecision: WarningResolution.Decision = .proceed
    /// Secrets removed from events and the log.
    public var redaction: Redaction = .default
    /// A second policy decided beside the live one and never enforced: a record carries its
    /// decision when it differs (``DecisionSnapshot/shadow``), and `audit report` lists the
    /// differences. It costs one more evaluation per request; nil evaluates none.
    public var shadowPolicy: Policy?
    /// The handlers `[respond handler:NAME]` rules name, by name. A rule naming a handler that is
    /// not here fails closed: the request is refused and nothing is sent.
    public var responseHandlers: [String: ResponseHandler] = [:]
    /// URL schemes besides http and https that the front-end claims (lower-case, e.g.
    /// `["app", "bridge"]`): their requests are decided like http ones, so a `respond` rule can
    /// answer them; when none does, they fail as they would without RequestAudit (unsupported URL)
    /// and are recorded.
    public var customSchemes: Set<String> = []
    /// Where finished records go besides the log (an OpenTelemetry exporter, say); each gets every
    /// record once, in ``AuditPipeline/finish(_:warning:outcome:)``, and is shut down with the
    /// pipeline.
    public var recordExporters: [any AuditRecordExporter] = []
    /// An app's recording: every exchange a server or the cache answers written to a HAR file
    /// (`.record`), or the responses of one answering the requests they match (`.replay`); see
    /// docs/recordings.md.
    public var recording: RecordingMode?
    /// The largest body a recording keeps (64 MiB). A larger response body is written by its size
    /// alone, so that recording a big download never holds it in memory, and is a miss when
    /// replayed; a larger request body by its size and digest, on which a replay still matches.
    public var recordingMaximumBodyBytes = HARRecorder.defaultMaximumBodyBytes
    /// Where an app's `cache` rules keep responses (`Auditor` opens it; created when missing); nil:
    /// cache rules keep nothing in the app. The cache is private to the app: it stores
    /// `Cache-Control: private` responses and ignores `s-maxage`. `audit proxy` has its own
    /// (`--cache-dir`).
    public var cacheDirectory: String?
    /// The most bytes ``cacheDirectory`` may hold; the least recently used responses go first.
    public var cacheSize = 256 << 20
    /// The swift-metrics backend of this pipeline's metrics; nil uses the one bootstrapped for the
    /// process (`MetricsSystem.bootstrap`), which is none by default.
    public var metricsFactory: (any MetricsFactory)?

    /// The defaults: no log, fail closed, warnings proceed, default redaction.
    public init() {}
}

/// What an app does with a HAR recording (``PipelineConfiguration/recording``).
public enum RecordingMode: Sendable, Equatable {
    /// Write every exchange a server or the cache answers to the HAR file at this path (secrets
    /// redacted): each redirect hop its own entry, the request body however it was sent
    /// (`httpBody`, a body stream, an upload task's bytes or file).
    case record(String)
    /// Answer the requests the HAR file at this path has responses for, its redirects followed;
    /// a miss fails with 504, goes to the server, or goes to the server and is added to the file
    /// (`onMiss: .record`, VCR's "new episodes"). Requests match on method, canonical URL and
    /// body, without the query parameters named in `ignoring` (volatile ones: timestamps, nonces);
    /// a stream's pieces come as far apart as recorded divided by `speed` (0: at once; 0 or more).
    case replay(String, onMiss: HARReplay.OnMiss, ignoring: Set<String> = [], speed: Double = 1)
}
