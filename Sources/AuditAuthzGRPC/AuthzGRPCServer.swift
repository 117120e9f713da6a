import AuditAuthz
import AuditLocking
import GRPCCore
import GRPCNIOTransportHTTP2

/// The gRPC listener of `audit authz`: Envoy's `envoy.service.auth.v3.Authorization` service over
/// plaintext HTTP/2 (h2c, as Envoy's `envoy_grpc` cluster speaks it on a trusted network).
///
/// ```swift
/// let server = AuthzGRPCServer(host: "127.0.0.1", port: 9192, decider: AuthzDecider(pipeline: pipeline))
/// try await server.start()
/// await server.stop()
/// ```
public final class AuthzGRPCServer: Sendable {
    /// Decides every check.
    public let decider: AuthzDecider
    /// The address it listens on.
    public let host: String
    private let server: GRPCServer<HTTP2ServerTransport.Posix>
    private let transport: HTTP2ServerTransport.Posix
    private let serving = Locked<Task<Void, Never>?>(nil)
    private let bound = Locked<Int?>(nil)

    /// A listener (not yet listening) on `host`:`port` whose checks `decider` decides.
    public init(host: String, port: Int, decider: AuthzDecider) {
        self.decider = decider
        self.host = host
        let address: GRPCNIOTransportCore.SocketAddress =
            host.contains(":") ? .ipv6(host: host, port: port) : .ipv4(host: host, port: port)
        // Flush coalescing off: a check is one small answer, and delaying its flush to batch it with
        // others cost a grpcio client half its round trip (0.95 against 0.51 ms p50, one call at a time)
        // and the listener about 0.3 ms of CPU a call.
        transport = .http2NIOPosix(
            address: address, transportSecurity: .plaintext,
            config: .defaults { $0.connection.flushCoalescing = nil })
        server = GRPCServer(transport: transport, services: [EnvoyAuthorizationService(decider: decider)])
    }

    /// The port it listens on, once ``start()`` returned.
    public var port: Int? { bound.withLock { $0 } }

    /// Starts serving, and returns once the address is bound.
    ///
    /// - Throws: when the address cannot be bound.
    public func start() async throws {
        let server = server
        let task = Task {
            do { try await server.serve() } catch {}
        }
        serving.withLock { $0 = task }
        let address = try await transport.listeningAddress
        bound.withLock { $0 = address.ipv4?.port ?? address.ipv6?.port }
    }

    /// Stops gracefully: stops accepting, lets the checks in flight finish, then returns.
    public func stop() async {
        server.beginGracefulShutdown()
        await serving.withLock { $0 }?.value
    }
}
