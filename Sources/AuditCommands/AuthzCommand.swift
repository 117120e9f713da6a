import ArgumentParser
import AuditAuthz
import AuditPipeline
import AuditPolicy
import AuditProxy
import AuditReport
import Foundation

#if EnvoyGRPC
    import AuditAuthzGRPC
#endif

extension HTTPContracts.Selection: ExpressibleByArgument {}

/// `audit authz`: the policy as the external authorization service of the gateways people already
/// run (Envoy and Istio, nginx, Caddy, Traefik).
struct AuthzCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "authz",
        abstract: "Decide a gateway's authorization checks (Envoy ext_authz, nginx auth_request, Caddy, Traefik).",
        discussion: """
            The HTTP listener answers Envoy's HTTP ext_authz service, nginx auth_request (X-Original-URI, \
            X-Original-Method, X-Forwarded-Proto, X-Forwarded-Host; or X-Original-URL, as ingress-nginx sends \
            it) and Caddy forward_auth / Traefik ForwardAuth (X-Forwarded-Method, -Proto, -Host, -Uri), told \
            apart by their headers unless --contract names one. --grpc-listen adds Envoy's gRPC \
            Authorization/Check service. 2xx allows (with X-Request-Audit-Verdict and -Rule for the upstream); a \
            refusal answers with the status and JSON body the gateway passes on; a warning is acknowledged by \
            sending the request again with 'Audit-Acknowledge: RULE-ID'. Every check is one record in the log \
            (outcome kind authz). SIGHUP reloads the policies (the old ones stay in force on error); SIGINT or \
            SIGTERM stops accepting, answers what is in flight and flushes the log.
            """
    )

    @Option(name: .long, help: "The address of the HTTP listener, HOST:PORT.")
    var listen = "127.0.0.1:9191"

    @Option(name: .customLong("grpc-listen"), help: "The address of Envoy's gRPC Authorization service, HOST:PORT.")
    var grpcListen: String?

    @OptionGroup var service: ServiceOptions

    @Option(name: .long, help: "The HTTP contract: auto (told apart by headers), envoy, nginx or forward-auth.")
    var contract = HTTPContracts.Selection.auto

    @Option(
        name: .customLong("path-prefix"),
        help: "Envoy's HTTP service: the path_prefix the gateway puts before the original path.")
    var pathPrefix = ""

    @Option(
        name: .customLong("max-concurrent-checks"),
        help: "Most checks in flight at once; beyond it a check is answered 503 at once instead of queueing.")
    var maximumConcurrentChecks = 1_024

    @OptionGroup var exports: ExportOptions

    func validate() throws {
        _ = try ProxyCommand.hostAndPort(listen)
        if let grpcListen {
            #if EnvoyGRPC
                _ = try ProxyCommand.hostAndPort(grpcListen, option: "--grpc-listen")
            #else
                throw ValidationError(
                    "--grpc-listen needs the EnvoyGRPC package trait, which this build of audit was made without")
            #endif
        }
        if !pathPrefix.isEmpty, !pathPrefix.hasPrefix("/") || pathPrefix.hasSuffix("/") {
            throw ValidationError(
                "--path-prefix: expected a path starting with '/' and not ending with one, got '\(pathPrefix)'")
        }
        guard maximumConcurrentChecks > 0 else {
            throw ValidationError("--max-concurrent-checks: expected a positive number, got \(maximumConcurrentChecks)")
        }
    }

    func run() async throws {
        let policy = try service.policy()
        var pipelineConfiguration = PipelineConfiguration()
        try service.configure(&pipelineConfiguration)
        let exporting = try await exports.start(into: &pipelineConfiguration, command: "audit authz")
        let pipeline = try ServiceOptions.pipeline(
            policy: policy, configuration: pipelineConfiguration, command: "audit authz")
        let decider = AuthzDecider(
            pipeline: pipeline, warnings: service.warn == .allow ? .proceed : .cancel,
            maximumConcurrentChecks: maximumConcurrentChecks)
        var configuration = AuthzConfiguration()
        (configuration.host, configuration.port) = try ProxyCommand.hostAndPort(listen)
        configuration.contracts = HTTPContracts(selection: contract, pathPrefix: pathPrefix)
        if let threads = service.threads { configuration.threads = threads }
        let server = AuthzHTTPServer(configuration: configuration, decider: decider)
        try await ServiceOptions.listen("audit authz", on: listen) { try await server.start() }
        #if EnvoyGRPC
            let grpc: AuthzGRPCServer?
            do {
                grpc = try await startGRPC(decider)
            } catch {
                await server.stop()
                throw error
            }
            let grpcNote = grpc.map { " (gRPC \($0.host):\($0.port ?? 0))" } ?? ""
        #else
            let grpcNote = ""
        #endif
        let signals = SignalWatch()
        service.reload(pipeline, on: signals, command: "audit authz")
        CommandOutput.line(
            "audit authz listening on \(configuration.host):\(server.port ?? configuration.port)\(grpcNote) — "
                + "\(plural(policy.rules.count, "rule")) \(service.note), contract \(contract.rawValue)")
        await signals.waitForStop()
        CommandOutput.errorLine("audit authz: stopping (answering \(decider.gate.count) in flight)")
        #if EnvoyGRPC
            await grpc?.stop()
        #endif
        await server.stop()
        try? await pipeline.shutdown()
        await exporting.stop()
        let statistics = pipeline.statistics
        CommandOutput.errorLine(
            "audit authz: stopped after \(plural(statistics.requests, "check")) (\(decider.gate.shed) shed); "
                + ServiceOptions.verdictCounts(statistics))
    }

    #if EnvoyGRPC
        /// The gRPC listener of `--grpc-listen`, started, or nil without the option.
        private func startGRPC(_ decider: AuthzDecider) async throws -> AuthzGRPCServer? {
            guard let grpcListen else { return nil }
            let (host, port) = try ProxyCommand.hostAndPort(grpcListen, option: "--grpc-listen")
            let server = AuthzGRPCServer(host: host, port: port, decider: decider)
            try await ServiceOptions.listen("audit authz", on: grpcListen) { try await server.start() }
            return server
        }
    #endif
}
