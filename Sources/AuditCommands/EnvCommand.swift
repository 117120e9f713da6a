#if TLSInterception
    import ArgumentParser
    import AuditTLS
    import Foundation

    /// `audit env`: the environment that sends a tool's requests through `audit proxy` and makes it
    /// trust the proxy's CA.
    struct EnvCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "env",
            abstract: "Print the shell lines that send tools through audit proxy and make them trust its CA.",
            discussion: """
                Use it as: eval "$(audit env --ca-dir DIR --proxy http://127.0.0.1:8080)". Variables that replace a \
                tool's trust store point at a bundle of the system's roots, any bundle such a variable named \
                already, and the CA; NODE_EXTRA_CA_CERTS and DENO_CERT, which add to the store, at the CA (with \
                the file they named already). NO_PROXY is empty unless --no-proxy says otherwise, so that no \
                request goes around the proxy.
                """
        )

        @Option(
            name: .customLong("ca-dir"),
            help: "The CA folder (made on first use; default: $XDG_CONFIG_HOME/request-audit/ca).")
        var caDirectory: String?

        @Option(help: "The proxy's URL, http://HOST:PORT (a bare HOST:PORT is read as one).")
        var proxy = "http://127.0.0.1:8080"

        @Option(name: .customLong("no-proxy"), help: "Hosts that go around the proxy (NO_PROXY), comma-separated.")
        var noProxy = ""

        mutating func validate() throws {
            proxy = try Self.proxyURL(proxy)
        }

        /// `text` as the URL every tool reads the same way: `http` or `https`, a host and a port
        /// (tools disagree on the default port), nothing after; a bare `HOST:PORT` gets `http://`.
        static func proxyURL(_ text: String) throws(ValidationError) -> String {
            let url = text.contains("://") ? text : "http://" + text
            guard let parts = URLComponents(string: url), let scheme = parts.scheme?.lowercased(),
                ["http", "https"].contains(scheme), let host = parts.host, !host.isEmpty, let port = parts.port,
                (1...65_535).contains(port), ["", "/"].contains(parts.path), parts.query == nil, parts.fragment == nil,
                parts.user == nil
            else {
                throw ValidationError(
                    "--proxy: expected the proxy's URL with its port, such as http://127.0.0.1:8080, got '\(text)'")
            }
            return url
        }

        func run() throws {
            let folder = CertificateAuthorityDirectory(path: caDirectory ?? defaultCADirectory())
            do {
                _ = try folder.loadOrCreate()
                let variables = try ProxyEnvironment.variables(
                    proxy: proxy, noProxy: noProxy, folder: folder, existing: ProcessInfo.processInfo.environment)
                for (name, value) in variables {
                    CommandOutput.line("export \(name)=\(ProxyEnvironment.quoted(value))")
                }
            } catch {
                CommandOutput.errorLine("audit env: \(error.description)")
                throw ExitCode.failure
            }
        }
    }

    /// The variables that send tools through a proxy and make them trust its CA.
    enum ProxyEnvironment {
        /// The variables that send tools through `proxy` (both cases) and `noProxy` around it.
        static func proxyVariables(proxy: String, noProxy: String) -> [(String, String)] {
            ["HTTP_PROXY", "http_proxy", "HTTPS_PROXY", "https_proxy"].map { ($0, proxy) }
                + [("NO_PROXY", noProxy), ("no_proxy", noProxy), ("NODE_USE_ENV_PROXY", "1")]
        }

        /// Variables whose file replaces a tool's trust store.
        static let storeReplacing = [
            "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "PIP_CERT", "NPM_CONFIG_CAFILE",
            "CARGO_HTTP_CAINFO",
        ]
        /// Variables whose file adds to a tool's trust store.
        static let storeExtending = ["NODE_EXTRA_CA_CERTS", "DENO_CERT"]

        /// The variables, in a fixed order. When `existing` names bundles of the user's own in the
        /// store-replacing or store-extending variables, bundles that also hold those are written to
        /// the CA `folder` (`env-bundle.pem`, `env-extra.pem`) and named instead, each certificate
        /// once: made again from the variables they set (a shell that evaluates `audit env` twice),
        /// they come out the same.
        static func variables(
            proxy: String, noProxy: String, folder: CertificateAuthorityDirectory, existing: [String: String]
        ) throws(TLSSetupError) -> [(String, String)] {
            var result = proxyVariables(proxy: proxy, noProxy: noProxy)
            let (certificatePath, bundlePath, scratchFolder) = (folder.certificatePath, folder.bundlePath, folder.path)
            let certificate = try CertificateAuthorityDirectory.read(certificatePath)
            let userStores = userFiles(storeReplacing, existing, excluding: [bundlePath])
            var storeFile = bundlePath
            if !userStores.isEmpty {
                storeFile = scratchFolder + "/env-bundle.pem"
                try CertificateAuthorityDirectory.write(
                    SystemTrust.bundle(adding: [certificate], files: userStores), to: storeFile, mode: 0o644)
            }
            let userExtras = userFiles(storeExtending, existing, excluding: [certificatePath])
            var extraFile = certificatePath
            if !userExtras.isEmpty {
                extraFile = scratchFolder + "/env-extra.pem"
                var extras = PEMBundle()
                for file in userExtras { extras.add(contentsOf: file) }
                extras.add(certificate)
                try CertificateAuthorityDirectory.write(extras.text, to: extraFile, mode: 0o644)
            }
            for name in storeReplacing { result.append((name, storeFile)) }
            for name in storeExtending { result.append((name, extraFile)) }
            return result
        }

        /// The distinct readable files `names` point at in `environment`, but `excluding`.
        static func userFiles(_ names: [String], _ environment: [String: String], excluding: Set<String>) -> [String] {
            var seen = excluding
            var files: [String] = []
            for name in names {
                guard let path = environment[name], !path.isEmpty, !seen.contains(path),
                    FileManager.default.isReadableFile(atPath: path)
                else { continue }
                seen.insert(path)
                files.append(path)
            }
            return files
        }

        /// `value` quoted for a POSIX shell.
        static func quoted(_ value: String) -> String {
            "'" + value.replacingOccurrences(of: "'", with: #"'\''"#) + "'"
        }
    }
#endif
