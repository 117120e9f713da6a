import AuditCache
import AuditPipeline
import AuditReport
import NIOCore

/// How `audit proxy` listens, decides and limits.
public struct ProxyConfiguration: Sendable {
    /// What a `warn` verdict does for a client that cannot answer a dialog.
    public enum WarningMode: String, Sendable, CaseIterable {
        /// Answer 403 with `"error":"warning"`; a retry carrying `Audit-Acknowledge: RULE-ID`
        /// proceeds and is recorded as acknowledged.
        case deny
        /// Proceed and record.
        case allow
    }

    /// The address to listen on.
    public var host = "127.0.0.1"
    /// The port to listen on (0: any free port, see ``ProxyServer/port``).
    public var port = 8080
    /// The pipeline's settings: the log, match-error handling, redaction.
    public var pipeline = PipelineConfiguration()
    /// What a `warn` verdict does.
    public var warnings = WarningMode.deny
    /// Most bytes a request head (request line and headers) may take; beyond, 431 and the connection closes.
    public var maximumHeaderBytes = 64 * 1_024
    /// Most client connections open at once; beyond, a new one gets 503 and is closed.
    public var maximumConnections = 4_096
    /// How long a started request head may take to arrive in full; beyond, 408 and the connection closes.
    public var headerTimeout: Duration = .seconds(10)
    /// How long a client connection may sit idle between requests before it is closed.
    public var idleTimeout: Duration = .seconds(60)
    /// How long a graceful stop waits for requests and tunnels in flight before closing them.
    public var drainTimeout: Duration = .seconds(10)
    /// The ports a CONNECT may open a spliced tunnel to (nil: any). Only 443 by default: a tunnel to a
    /// plain HTTP port would carry requests nobody decided. An intercepted tunnel may go to any port:
    /// each request inside it is decided.
    public var connectPorts: Set<Int>? = [443]
    /// Where the responses of `cache` rules are kept and served from (nil: cache rules keep
    /// nothing). Shared: `Cache-Control: private` responses are never stored, `s-maxage` applies.
    public var cache: HTTPCache?
    /// Where every exchange the server answers is recorded (`--record FILE.har`), if anywhere.
    public var recorder: HARRecorder?
    /// A recording whose responses answer the requests they match (`--replay FILE.har`), if any.
    public var replay: HARReplay?
    /// What a request the recording has no response for gets: 504 (`fail`) or the server (`pass`).
    public var replayMiss = HARReplay.OnMiss.fail
    /// How fast recorded streams are replayed: 1 at their recorded pace, 2 twice as fast, 0 at once.
    public var replaySpeed = 1.0
    /// Event loop threads (default: one per core).
    public var threads = System.coreCount
    #if TLSInterception
        /// TLS interception (nil: every CONNECT tunnel is spliced and decided on its host alone).
        public var tlsInterception: TLSInterceptionSettings?
    #endif

    /// Whether the proxy can reach servers over TLS itself: inside intercepted tunnels, and for a
    /// redirect to an `https` URL.
    var reachesTLSServers: Bool {
        #if TLSInterception
            tlsInterception != nil
        #else
            false
        #endif
    }

    /// The defaults: 127.0.0.1:8080, warnings denied, 64 KiB heads, 4,096 connections.
    public init() {}
}
