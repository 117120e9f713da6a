import ArgumentParser
import AuditOpenTelemetry
import AuditPipeline
import AuditPolicy
import AuditPrometheus
import AuditProxy
import AuditReport
import Dispatch
import Foundation

/// `audit proxy`: a forward HTTP proxy that audits every request of any client (curl, git, npm,
/// pip, browsers, SDKs) against the policy.
struct ProxyCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "proxy",
        abstract: "Run a forward HTTP proxy (plain HTTP and CONNECT) that audits every request against the policy.",
        discussion: """
            Point clients at it with HTTP_PROXY and HTTPS_PROXY ('audit env' prints them). Plain HTTP requests are \
            decided on their method, URL and headers; HTTPS (CONNECT) on https://HOST[:PORT] and the CONNECT's \
            headers, unless --intercept-tls terminates the tunnel's TLS to decide each request inside as plain HTTP. A refused request gets 403 with a JSON body naming the rule; a warning is acknowledged by \
            sending the request again with the header 'Audit-Acknowledge: RULE-ID'. SIGHUP reloads the policies \
            (the old ones stay in force on error); SIGINT or SIGTERM stops accepting, finishes what is in flight \
            and flushes the log.
            """
    )

    @Option(name: .long, help: "The address to listen on, HOST:PORT.")
    var listen = "127.0.0.1:8080"

    @OptionGroup var service: ServiceOptions

    @Option(
        name: .customLong("connect-port"),
        help: "A port CONNECT may open a tunnel to (repeatable; default 443; 'any' for every port).")
    var connectPorts: [String] = []

    @Option(name: .customLong("max-connections"), help: "Most client connections open at once.")
    var maximumConnections = 4_096

    @OptionGroup var exports: ExportOptions

    @OptionGroup var cacheOptions: CacheOptions

    @OptionGroup var recording: RecordingOptions

    /// Refused, naming the trait, in a build without TLS interception.
    @OptionGroup var tls: ProxyTLSOptions

    func validate() throws {
        _ = try Self.hostAndPort(listen)
        _ = try allowedConnectPorts()
    }

    /// The ports of `--connect-port` (nil: any), 443 when none is given.
    func allowedConnectPorts() throws -> Set<Int>? {
        if connectPorts.contains("any") { return nil }
        guard !connectPorts.isEmpty else { return [443] }
        return Set(
            try connectPorts.map { text in
                guard let port = Int(text), (1...65_535).contains(port) else {
                    throw ValidationError("--connect-port: expected a port from 1 to 65535 or 'any', got '\(text)'")
                }
                return port
            })
    }

    /// `HOST:PORT` split, or a usage error naming the option.
    ///
    /// A port alone (`8080`, `:8080`) is refused with the two addresses it may have meant: Go's and Caddy's `:8080`
    /// means every interface, which for a proxy is an open proxy, so the choice is left to the user.
    static func hostAndPort(_ text: String, option: String = "--listen") throws -> (String, Int) {
        let portOnly = text.hasPrefix(":") ? text.dropFirst() : Substring(text)
        if let port = Int(portOnly), (0...65_535).contains(port) {
            throw ValidationError(
                "\(option): expected HOST:PORT, got '\(text)' (127.0.0.1:\(port) is this machine only, "
                    + "0.0.0.0:\(port) every interface)")
        }
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]),
            (0...65_535).contains(port), colon > text.startIndex
        else {
            throw ValidationError("\(option): expected HOST:PORT, got '\(text)'")
        }
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host, port)
    }

    func run() async throws {
        let policy = try service.policy()
        var configuration = ProxyConfiguration()
        (configuration.host, configuration.port) = try Self.hostAndPort(listen)
        configuration.warnings = service.warn
        configuration.connectPorts = try allowedConnectPorts()
        configuration.maximumConnections = maximumConnections
        if let threads = service.threads { configuration.threads = threads }
        try service.configure(&configuration.pipeline)
        let cache = try cacheOptions.open(for: policy, command: "audit proxy")
        defer { cache?.removeTemporary() }
        configuration.cache = cache?.cache
        try recording.configure(&configuration, command: "audit proxy")
        var interceptionNote = ""
        #if TLSInterception
            let interception = try tls.settings(command: "audit proxy")
            defer { interception?.1.removeTemporary() }
            configuration.tlsInterception = interception?.0
            if let (settings, files) = interception {
                interceptionNote =
                    ", TLS interception \(settings.scope.rawValue) (CA \(files.folder.certificatePath)"
                    + (files.isTemporary ? ", in memory)" : ")")
            }
        #endif
        let exporting = try await exports.start(into: &configuration.pipeline, command: "audit proxy")
        let pipeline = try ServiceOptions.pipeline(
            policy: policy, configuration: configuration.pipeline, command: "audit proxy")
        let proxy = ProxyServer(configuration: configuration, pipeline: pipeline)
        try await ServiceOptions.listen("audit proxy", on: listen) { try await proxy.start() }
        let signals = SignalWatch()
        service.reload(pipeline, on: signals, command: "audit proxy")
        CommandOutput.line(
            "audit proxy listening on \(configuration.host):\(proxy.port ?? configuration.port) — "
                + "\(plural(policy.rules.count, "rule")) \(service.note)" + interceptionNote
                + (cache?.note ?? "") + RecordingOptions.note(configuration))
        await signals.waitForStop()
        CommandOutput.errorLine("audit proxy: stopping (finishing \(pipeline.inFlightCount) in flight)")
        await proxy.stop()
        await exporting.stop()
        let statistics = pipeline.statistics
        CommandOutput.errorLine(
            "audit proxy: stopped after \(plural(statistics.requests, "request")); "
                + ServiceOptions.verdictCounts(statistics))
    }
}
