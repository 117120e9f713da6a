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

        /// Where the CA's public files are for this run, and the folder to remove at the end (an
        /// in-memory CA's).
        struct CAFiles {
            let certificatePath: String
            let bundlePath: String
            let temporaryFolder: String?

            func removeTemporary() {
                if let temporaryFolder { try? FileManager.default.removeItem(atPath: temporaryFolder) }
            }
        }

        /// The interception settings, and where the CA's certificate and bundle are; nil without
        /// `--intercept-tls`. An in-memory CA writes only its public certificate (and the bundle) to a
        /// private temporary folder.
        func settings(command: String) throws -> (TLSInterceptionSettings, CAFiles)? {
            guard let scope else { return nil }
            do {
                let authority: CertificateAuthority
                let files: CAFiles
                if let caDirectory {
                    let folder = CertificateAuthorityDirectory(path: caDirectory)
                    authority = try folder.loadOrCreate()
                    files = CAFiles(
                        certificatePath: folder.certificatePath, bundlePath: folder.bundlePath, temporaryFolder: nil)
                } else {
                    authority = try CertificateAuthority.generate()
                    files = try Self.writePublicFiles(of: authority)
                }
                let settings = try TLSInterceptionSettings(
                    authority: authority, scope: scope, passthrough: passthrough, upstreamRootFiles: upstreamCA)
                return (settings, files)
            } catch {
                CommandOutput.errorLine("\(command): \(error.description)")
                throw ExitCode.failure
            }
        }

        /// Writes an in-memory CA's certificate and a bundle with it to a new private folder.
        static func writePublicFiles(of authority: CertificateAuthority) throws(TLSSetupError) -> CAFiles {
            let folder = NSTemporaryDirectory() + "audit-ca-\(getpid())-\(UUID().uuidString.prefix(8))"
            do {
                try FileManager.default.createDirectory(
                    atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
            } catch {
                throw .file(path: folder, reason: "cannot make a folder: \(error.localizedDescription)")
            }
            let certificate: String
            do { certificate = try authority.certificatePEM } catch { throw .minting("\(error)") }
            let files = CAFiles(
                certificatePath: folder + "/ca.pem", bundlePath: folder + "/bundle.pem", temporaryFolder: folder)
            do {
                try certificate.write(toFile: files.certificatePath, atomically: true, encoding: .utf8)
                try SystemTrust.bundle(adding: [certificate]).write(
                    toFile: files.bundlePath, atomically: true, encoding: .utf8)
            } catch {
                throw .file(path: folder, reason: "cannot write: \(error.localizedDescription)")
            }
            return files
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
