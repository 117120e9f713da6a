#if TLSInterception
    import ArgumentParser
    import AuditTLS
    import Foundation

    /// `audit ca`: the certificate authority of TLS interception.
    struct CACommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ca",
            abstract: "Manage the CA that signs the certificates audit proxy shows when it intercepts TLS.",
            discussion: """
                The CA folder holds ca.pem (the certificate to trust), ca-key.pem (its private key, mode 0600) and \
                bundle.pem (the system's roots followed by the CA). To stop trusting it, remove the folder and \
                unset what 'audit env' set.
                """,
            subcommands: [Init.self, Show.self, Bundle.self]
        )

        struct Folder: ParsableArguments {
            @Option(
                name: .customLong("ca-dir"),
                help: "The CA folder (default: $XDG_CONFIG_HOME/request-audit/ca, else ~/.config/request-audit/ca).")
            var path: String?

            var folder: CertificateAuthorityDirectory {
                CertificateAuthorityDirectory(path: path ?? defaultCADirectory())
            }
        }

        /// `audit ca init`: makes a CA.
        struct Init: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Make a CA in the folder (refused if it has one, unless --force).")

            @OptionGroup var folder: Folder
            @Flag(help: "Replace the CA the folder has; clients that trusted it stop trusting the proxy.")
            var force = false

            func run() throws {
                let folder = folder.folder
                if folder.exists, !force {
                    CommandOutput.errorLine(
                        "audit ca init: \(folder.path) has a CA already; 'audit ca show' describes it, --force replaces it"
                    )
                    throw ExitCode.failure
                }
                let authority = try CACommand.run { () throws(TLSSetupError) in try folder.create() }
                try CACommand.describe(authority, folder: folder)
            }
        }

        /// `audit ca show`: describes the CA.
        struct Show: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Describe the folder's CA: subject, validity, fingerprints, files.")

            @OptionGroup var folder: Folder

            func run() throws {
                let folder = folder.folder
                guard folder.exists else {
                    CommandOutput.errorLine("audit ca show: \(folder.path) has no CA; 'audit ca init' makes one")
                    throw ExitCode.failure
                }
                let authority = try CACommand.run { () throws(TLSSetupError) in try folder.load() }
                try CACommand.describe(authority, folder: folder)
            }
        }

        /// `audit ca bundle`: writes the bundle again.
        struct Bundle: ParsableCommand {
            static let configuration = CommandConfiguration(
                abstract: "Write bundle.pem again (the system's roots as they are now, then the CA) and print its path."
            )

            @OptionGroup var folder: Folder

            func run() throws {
                let folder = folder.folder
                let authority = try CACommand.run { () throws(TLSSetupError) in try folder.loadOrCreate() }
                try CACommand.run { () throws(TLSSetupError) in try folder.writeBundle(for: authority) }
                CommandOutput.line(folder.bundlePath)
            }
        }

        /// Runs `body`, turning a setup error into a message and exit code 1.
        static func run<T>(_ body: () throws(TLSSetupError) -> T) throws -> T {
            do {
                return try body()
            } catch {
                CommandOutput.errorLine("audit ca: \(error.description)")
                throw ExitCode.failure
            }
        }

        static func describe(_ authority: CertificateAuthority, folder: CertificateAuthorityDirectory) throws {
            let certificate = authority.certificate
            let fingerprint = try authority.fingerprintSHA256
            let spki = authority.publicKeySHA256
            let dates = ISO8601DateFormatter()
            CommandOutput.line("subject:      \(certificate.subject)")
            CommandOutput.line(
                "valid:        \(dates.string(from: certificate.notValidBefore)) to "
                    + dates.string(from: certificate.notValidAfter))
            CommandOutput.line("sha256:       \(fingerprint)")
            CommandOutput.line("spki sha256:  \(spki)  (Chromium: --ignore-certificate-errors-spki-list=\(spki))")
            CommandOutput.line("certificate:  \(folder.certificatePath)")
            CommandOutput.line("private key:  \(folder.privateKeyPath)")
            CommandOutput.line("bundle:       \(folder.bundlePath)")
        }
    }
#endif
