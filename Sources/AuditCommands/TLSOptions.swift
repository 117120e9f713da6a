#if TLSInterception
    import ArgumentParser
    import AuditProxy
    import AuditTLS
    import Foundation

    extension TLSInterceptionSettings.Scope: ExpressibleByArgument {}

    /// How a command's `--tls-passthrough` takes its hosts.
    protocol PassthroughParsing {
        /// The parsing strategy of the option's values.
        static var strategy: ArrayParsingStrategy { get }
    }

    /// `audit proxy --tls-passthrough A B …`: every value up to the next option.
    enum HostsUpToNextOption: PassthroughParsing {
        static var strategy: ArrayParsingStrategy { .upToNextOption }
    }

    /// `audit run --tls-passthrough A COMMAND …`: one value each time, so that the command after
    /// audit run's options is not read as more hosts.
    enum OneHostPerOption: PassthroughParsing {
        static var strategy: ArrayParsingStrategy { .singleValue }
    }

    /// `audit proxy`'s TLS interception options.
    typealias ProxyTLSOptions = TLSOptions<HostsUpToNextOption>

    /// The TLS interception options of `audit proxy` and `audit run`.
    struct TLSOptions<Passthrough: PassthroughParsing>: ParsableArguments {
        @Option(
            name: .customLong("intercept-tls"),
            help: ArgumentHelp(
                "Terminate the TLS of CONNECT tunnels to decide each HTTPS request on its URL, method and headers: "
                    + "'--intercept-tls' for the hosts some rule could decide on more than the host, "
                    + "'--intercept-tls=all' for every host.",
                valueName: "selective|all"))
        var scope: TLSInterceptionSettings.Scope?

        @Option(
            name: .customLong("tls-passthrough"), parsing: Passthrough.strategy,
            help: ArgumentHelp(
                "Hosts whose tunnels are never terminated (pinned clients): example.org, *.example.org or an IP "
                    + "address; repeatable, or comma-separated.",
                valueName: "host"))
        var passthrough: [String] = []

        @Option(name: .customLong("upstream-ca"), help: "A PEM file of roots servers may also chain to (repeatable).")
        var upstreamCA: [String] = []

        @Option(
            name: .customLong("ca-dir"),
            help: "Keep the CA in this folder (made on first use); without it, the CA lives in memory for this run.")
        var caDirectory: String?

        func validate() throws {
            if scope == nil, !passthrough.isEmpty || !upstreamCA.isEmpty {
                throw ValidationError("--tls-passthrough and --upstream-ca need --intercept-tls")
            }
            for host in passthroughHosts {
                do throws(TLSSetupError) {
                    _ = try TLSInterceptionSettings.canonicalPassthrough(host)
                } catch {
                    throw ValidationError("--tls-passthrough: \(error.description)")
                }
            }
        }

        /// The `--tls-passthrough` hosts, each use's comma-separated list split.
        private var passthroughHosts: [String] {
            passthrough.flatMap { $0.split(separator: ",") }.map { String($0).trimmingCharacters(in: .whitespaces) }
                .filter { !$0.isEmpty }
        }

        /// The interception settings, and the CA's folder; nil without `--intercept-tls`.
        func settings(command: String) throws -> (TLSInterceptionSettings, CAFolder)? {
            guard let scope else { return nil }
            let files =
                caDirectory.map { CAFolder(folder: CertificateAuthorityDirectory(path: $0), isTemporary: false) }
                ?? CAFolder(
                    folder: CertificateAuthorityDirectory(
                        path: NSTemporaryDirectory() + "audit-ca-\(getpid())-\(UUID().uuidString.prefix(8))"),
                    isTemporary: true)
            do {
                let authority: CertificateAuthority
                if files.isTemporary {
                    authority = try CertificateAuthority.generate()
                    try files.folder.writePublicFiles(of: authority)
                } else {
                    authority = try files.folder.loadOrCreate()
                }
                let settings = try TLSInterceptionSettings(
                    authority: authority, scope: scope, passthrough: passthroughHosts, upstreamRootFiles: upstreamCA)
                return (settings, files)
            } catch {
                files.removeTemporary()
                CommandOutput.errorLine("\(command): \(error.description)")
                throw ExitCode.failure
            }
        }
    }

    /// The folder of the CA's files for this run: `--ca-dir`, or for an in-memory CA a private
    /// temporary one holding only its public files, removed at the end.
    struct CAFolder {
        let folder: CertificateAuthorityDirectory
        let isTemporary: Bool

        func removeTemporary() {
            if isTemporary { try? FileManager.default.removeItem(atPath: folder.path) }
        }
    }

    /// The CA folder `audit ca` and `audit env` use without `--ca-dir`:
    /// `$XDG_CONFIG_HOME/request-audit/ca`, else `~/.config/request-audit/ca`.
    func defaultCADirectory() -> String {
        let environment = ProcessInfo.processInfo.environment
        let base =
            environment["XDG_CONFIG_HOME"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (NSHomeDirectory() + "/.config")
        return base + "/request-audit/ca"
    }
#endif
