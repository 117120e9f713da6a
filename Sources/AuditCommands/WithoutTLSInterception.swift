#if !TLSInterception
    import ArgumentParser

    // A build without the `TLSInterception` package trait (`make demo` makes one, to stay fast) has
    // no `audit run`, `env` or `ca` and no TLS options for `audit proxy`. These stand-ins take the
    // same names and say so, instead of the parser's "unknown option" for a command it does not know.

    /// What a build without TLS interception answers where it is asked for.
    private func withoutTLSInterception(_ what: String) -> ValidationError {
        ValidationError(
            "\(what) needs the TLSInterception package trait, which this build of audit was made without "
                + "(make demo builds it so); 'swift build --product audit' builds it with the trait")
    }

    /// `audit run`, `env` or `ca` (``Name``) in a build without TLS interception: it takes any
    /// arguments and says what the build lacks.
    struct CommandWithoutTLSInterception<Name: CommandName>: ParsableCommand {
        static var configuration: CommandConfiguration {
            CommandConfiguration(
                commandName: Name.name,
                abstract: "Not in this build of audit: it needs the TLSInterception package trait.")
        }

        @Argument(parsing: .allUnrecognized) var arguments: [String] = []

        func run() throws { throw withoutTLSInterception("audit \(Name.name)") }
    }

    /// The name of a command a build without TLS interception lacks.
    protocol CommandName { static var name: String { get } }
    enum Run: CommandName { static let name = "run" }
    enum Env: CommandName { static let name = "env" }
    enum CA: CommandName { static let name = "ca" }

    typealias RunCommand = CommandWithoutTLSInterception<Run>
    typealias EnvCommand = CommandWithoutTLSInterception<Env>
    typealias CACommand = CommandWithoutTLSInterception<CA>

    /// `audit proxy`'s TLS options in a build without TLS interception: hidden, and refused when given.
    struct ProxyTLSOptions: ParsableArguments {
        @Option(name: .customLong("intercept-tls"), help: .hidden) var scope: String?
        @Option(name: .customLong("tls-passthrough"), parsing: .upToNextOption, help: .hidden)
        var passthrough: [String] = []
        @Option(name: .customLong("upstream-ca"), help: .hidden) var upstreamCA: [String] = []
        @Option(name: .customLong("ca-dir"), help: .hidden) var caDirectory: String?

        func validate() throws {
            let given = [
                scope.map { _ in "--intercept-tls" }, passthrough.isEmpty ? nil : "--tls-passthrough",
                upstreamCA.isEmpty ? nil : "--upstream-ca", caDirectory.map { _ in "--ca-dir" },
            ].compactMap { $0 }
            if let first = given.first { throw withoutTLSInterception(first) }
        }
    }
#endif
