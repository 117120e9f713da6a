#if TLSInterception
    import ArgumentParser
    import AuditPipeline
    import AuditPolicy
    import AuditProxy
    import Dispatch
    import Foundation

    /// `audit run [--] COMMAND ARGS…`: runs one command with every request it and its children make
    /// going through an audit proxy of its own.
    struct RunCommand: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "run",
            abstract: "Run a command with its requests audited by a proxy of its own, then summarize them.",
            discussion: """
                Starts audit proxy on a free loopback port (with a CA in memory under --intercept-tls), runs the \
                command with the environment 'audit env' prints, passes its standard streams and exit status \
                through, stops the proxy, flushes the log, and prints one summary line to standard error. Child \
                processes inherit the environment.
                """
        )

        @Option(help: "The folder of .rules files.")
        var policies = "policies"

        @Option(help: "The JSON Lines audit log to append to.")
        var log = "audit.jsonl"

        @Option(help: "What a warn verdict does: deny (403 until acknowledged) or allow (proceed and record).")
        var warn = ProxyConfiguration.WarningMode.deny

        @OptionGroup var tls: TLSOptions<OneHostPerOption>

        @OptionGroup var cacheOptions: CacheOptions

        @OptionGroup var recording: RecordingOptions

        @Option(name: .customLong("no-proxy"), help: "Hosts that go around the proxy (NO_PROXY), comma-separated.")
        var noProxy = ""

        @Argument(
            parsing: .captureForPassthrough,
            help: "The command and its arguments, after -- (or after audit run's options, which end at its name).")
        var command: [String] = []

        mutating func validate() throws {
            // `audit run -- COMMAND ARGS…` and `audit run COMMAND ARGS…` alike: audit run's options end at the
            // first `--` or at the command's name; every argument after that is the command's, `--` included.
            // Before either, a dash-prefixed argument is one of audit run's own that the parser did not take:
            // help, or a misspelt option, never a command's name.
            if let first = command.first, first.hasPrefix("-"), first != "--" {
                if first == "-h" || first == "--help" { throw CleanExit.helpRequest(self) }
                throw ValidationError(
                    "unknown option '\(first)': audit run's options come before the command, which follows -- "
                        + "(audit run --help lists them)")
            }
            if command.first == "--" { command.removeFirst() }
            if command.isEmpty { throw ValidationError("name the command to run after --: audit run -- COMMAND ARGS…") }
        }

        func run() async throws {
            let policy = try loadPolicy(directory: policies, option: "--policies DIR")
            var configuration = ProxyConfiguration()
            configuration.port = 0
            configuration.warnings = warn
            configuration.pipeline.logPath = log
            let interception = try tls.settings(command: "audit run")
            defer { interception?.1.removeTemporary() }
            configuration.tlsInterception = interception?.0
            let cache = try cacheOptions.open(for: policy, command: "audit run")
            defer { cache?.removeTemporary() }
            configuration.cache = cache?.cache
            try recording.configure(&configuration, command: "audit run")
            let pipeline = try ServiceOptions.pipeline(
                policy: policy, configuration: configuration.pipeline, command: "audit run")
            let proxy = ProxyServer(
                configuration: configuration, pipeline: pipeline,
                report: { line in FileHandle.standardError.write(Data("audit: \(line)\n".utf8)) })
            do {
                try await proxy.start()
            } catch {
                CommandOutput.errorLine("audit run: cannot start the proxy: \(error)")
                throw ExitCode.failure
            }
            if let note = Self.nodeBypassNote(command: command, path: ProcessInfo.processInfo.environment["PATH"] ?? "")
            {
                CommandOutput.errorLine(note)
            }
            let status: Int32
            do {
                status = try await runChild(proxyURL: "http://127.0.0.1:\(proxy.port ?? 0)", ca: interception?.1)
            } catch {
                await proxy.stop()
                CommandOutput.errorLine("audit run: \(error)")
                throw ExitCode((error as? ChildProcess.SpawnError)?.exitStatus ?? ExitCode.failure.rawValue)
            }
            await proxy.stop()
            CommandOutput.errorLine(Self.summary(pipeline.statistics, policy: policy, log: log))
            if status != 0 { throw ExitCode(status) }
        }

        /// Runs the command with the proxy's environment, passing SIGTERM and SIGHUP on to it (SIGINT
        /// from a terminal reaches it directly: it stays in the terminal's process group).
        private func runChild(proxyURL: String, ca: CAFolder?) async throws -> Int32 {
            var environment = ProcessInfo.processInfo.environment
            let variables =
                try ca.map { ca in
                    try ProxyEnvironment.variables(
                        proxy: proxyURL, noProxy: noProxy, folder: ca.folder, existing: environment)
                } ?? ProxyEnvironment.proxyVariables(proxy: proxyURL, noProxy: noProxy)
            for (name, value) in variables { environment[name] = value }
            let child = try ChildProcess(arguments: command, environment: environment)
            let queue = DispatchQueue(label: "audit.run.signals")
            var sources: [DispatchSourceSignal] = []
            for number in [SIGINT, SIGTERM, SIGHUP] {
                signal(number, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
                // SIGINT from a terminal reaches the child itself; one sent to audit alone is passed on.
                source.setEventHandler { child.send(number) }
                source.resume()
                sources.append(source)
            }
            let status = await child.exitStatus()
            for source in sources { source.cancel() }
            return status
        }

        /// A note when `command` is run by a Node that ignores proxy settings, or nil: before Node 24
        /// (whose `NODE_USE_ENV_PROXY`, set by audit run, makes it read `HTTPS_PROXY`), its `http`,
        /// `https` and `fetch` connect directly, so what the program sends is neither decided nor
        /// recorded unless it uses a proxy agent. The command is Node when it is named `node` or
        /// `nodejs`, or is a script whose `#!` line names one; the Node's own `--version` says which.
        static func nodeBypassNote(command: [String], path: String) -> String? {
            guard let first = command.first, let node = nodeExecutable(for: first, path: path),
                let version = nodeVersion(node), let major = Int(version.dropFirst().prefix { $0 != "." }),
                major < 24
            else { return nil }
            return "audit run: note: Node \(version) does not read HTTP_PROXY or HTTPS_PROXY (NODE_USE_ENV_PROXY "
                + "needs Node 24 or later): what its http, https and fetch send goes around the proxy, unaudited, "
                + "unless the program uses a proxy agent"
        }

        /// The Node that runs `command` (a name looked up in `path`, or a path), or nil when it is not
        /// Node nor a script whose `#!` line names it.
        private static func nodeExecutable(for command: String, path: String) -> String? {
            let isNode = { (name: Substring) in name == "node" || name == "nodejs" }
            let resolved = ChildProcess.resolve(command, path: path)
            if isNode(resolved.split(separator: "/").last ?? "") { return resolved }
            guard let file = FileHandle(forReadingAtPath: resolved) else { return nil }
            defer { try? file.close() }
            let head = (try? file.read(upToCount: 256)) ?? Data()
            guard head.starts(with: Data("#!".utf8)),
                let line = String(decoding: head.dropFirst(2), as: UTF8.self).split(separator: "\n").first
            else { return nil }
            // `#!/usr/bin/node`, `#!/usr/bin/env node`, `#!/usr/bin/env -S node --flag`.
            guard let word = line.split(separator: " ").first(where: { isNode($0.split(separator: "/").last ?? "") })
            else { return nil }
            return ChildProcess.resolve(String(word), path: path)
        }

        /// What `node --version` prints (`v20.20.2`), or nil when it cannot be run or prints no version.
        private static func nodeVersion(_ node: String) -> String? {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: node)
            process.arguments = ["--version"]
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            guard (try? process.run()) != nil else { return nil }
            let printed = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            let version = String(decoding: printed, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            return version.hasPrefix("v") ? version : nil
        }

        /// `audit: 41 requests · 2 blocked (competitor/rival-shop) · log audit.jsonl`: the requests
        /// the command made, an intercepted tunnel's one by one (the CONNECT of a tunnel that carried
        /// requests is not one of them; that of a tunnel whose handshake failed is).
        static func summary(_ statistics: AuditStatistics, policy: Policy, log: String) -> String {
            var parts = [plural(statistics.requests - statistics.interceptedTunnels, "request")]
            for action in [Verdict.Action.block, .warn, .redirect, .respond] {
                let count = statistics.verdicts[action] ?? 0
                guard count > 0 else { continue }
                let rules = statistics.decidedByRule.keys.filter { id in
                    policy.rule(id: id)?.action.keyword == action.rawValue
                }.sorted()
                let name =
                    switch action {
                    case .block: "blocked"
                    case .warn: "warned"
                    case .redirect: "redirected"
                    default: "answered locally"
                    }
                parts.append("\(count) \(name)" + (rules.isEmpty ? "" : " (\(rules.joined(separator: ", ")))"))
            }
            parts.append("log \(log)")
            return "audit: " + parts.joined(separator: " · ")
        }
    }
#endif
