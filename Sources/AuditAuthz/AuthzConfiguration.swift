import Foundation

/// The settings of the HTTP listener of `audit authz`.
public struct AuthzConfiguration: Sendable {
    /// The address to listen on.
    public var host = "127.0.0.1"
    /// The port to listen on (0: any free port, see ``AuthzHTTPServer/port``).
    public var port = 9_191
    /// Which HTTP contract the listener expects, and Envoy's path prefix.
    public var contracts = HTTPContracts()
    /// Event-loop threads.
    public var threads = ProcessInfo.processInfo.activeProcessorCount
    /// The longest a graceful stop waits for the checks in flight.
    public var drainTimeout: Duration = .seconds(10)

    /// Default settings: 127.0.0.1:9191, contracts told apart by their headers.
    public init() {}
}
