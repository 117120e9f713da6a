#if TLSInterception
    import ArgumentParser
    import AuditProxy
    import AuditTLS
    import Foundation

    extension TLSInterceptionSettings.Scope: ExpressibleByArgument {}

    /// The TLS interception options of `audit proxy` and `audit run`.
    struct TLSOptions: ParsableArguments {
        @Option(
            name: .customLong("intercept-tls"),
            help: ArgumentHelp(
                "Terminate the TLS of CONNECT tunnels to decide each HTTPS request on its URL, method and headers: "
                    + "'--intercept-tls' for the hosts some rule could decide on more than the host, "
                    + "'--intercept-tls=all' for every host.",
                valueName: "selective|all"))
        var scope: TLSInterceptionSettings.Scope?

        @Option(
            name: .customLong("tls-passthrough"), parsing: .upToNextOption,
            help: "Hosts whose tunnels are never terminated (pinned clients): example.org, or *.example.org.")
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

        /// The interception settings, and the CA's folder; nil without `--intercept-tls`.
        func settings(command: String) throws -> (TLSInterceptionSettings, CAFolder)? {
            guard let scope else { return nil }
            do {
                let authority: CertificateAuthority
                let files: CAFolder
                if let caDirectory {
                    files = CAFolder(folder: CertificateAuthorityDirectory(path: caDirectory), isTemporary: false)
                    authority = try files.folder.loadOrCreate()
                } else {
                    files = CAFolder(
                        folder: CertificateAuthorityDirectory(
                            path: NSTemporaryDirectory() + "audit-ca-\(getpid())-\(UUID().uuidString.prefix(8))"),
                        isTemporary: true)
                    authority = try CertificateAuthority.generate()
                    try files.folder.writePublicFiles(of: authority)
                }
                let settings = try TLSInterceptionSettings(
                    authority: authority, scope: scope, passthrough: passthrough, upstreamRootFiles: upstreamCA)
                return (settings, files)
            } catch {
                CommandOutput.errorLine("\(command): \(error.description)")
                throw ExitCode.failure
            }
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
