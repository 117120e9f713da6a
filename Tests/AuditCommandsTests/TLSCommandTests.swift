import AuditReport
import Foundation
import Testing

/// `audit ca`, `audit env` and `audit run`, run as a user runs them: the built binary, real files, real
/// clients (curl, Python requests) through the proxy `audit run` starts.
@Suite struct TLSCommandTests {
    static func variable(_ name: String) throws -> String {
        try #require(ProcessInfo.processInfo.environment[name], "\(name) is not set: run the tests with `make test`")
    }

    /// A folder whose `policies/p.rules` holds `rules`, where `audit run` writes `audit.jsonl`.
    final class RunFolder {
        let folder: TemporaryFolder
        var log: String { folder.path + "/audit.jsonl" }

        init(rules: String) throws {
            folder = try TemporaryFolder([:])
            try FileManager.default.createDirectory(
                atPath: folder.path + "/policies", withIntermediateDirectories: true)
            try rules.write(toFile: folder.path + "/policies/p.rules", atomically: true, encoding: .utf8)
        }

        /// `audit run --intercept-tls` with the test CA as upstream root and `options`, running
        /// `command` in the folder.
        func run(_ command: [String], options: [String] = []) throws -> AuditRun {
            try runBinary(
                [
                    "run", "--policies", folder.path + "/policies", "--log", log, "--intercept-tls",
                    "--upstream-ca", try TLSCommandTests.variable("NGINX_CA"),
                ] + options + ["--"] + command, in: folder.url)
        }
    }

    @Test("audit ca init makes a CA and describes it; a second init is refused; show and bundle read it")
    func caLifecycle() throws {
        let folder = try TemporaryFolder([:])
        let ca = folder.path + "/ca"
        let made = try runBinary(["ca", "init", "--ca-dir", ca])
        #expect(made.exitCode == 0, "\(made.standardError)")
        #expect(
            made.outputLines.map { String($0.prefix(13)) } == [
                "subject:     ", "valid:       ", "sha256:      ", "spki sha256: ", "certificate: ", "private key: ",
                "bundle:      ",
            ])
        #expect(made.outputLines.last == "bundle:       \(ca)/bundle.pem")
        let again = try runBinary(["ca", "init", "--ca-dir", ca])
        #expect(again.exitCode == 1)
        #expect(
            again.standardError
                == "audit ca init: \(ca) has a CA already; 'audit ca show' describes it, --force replaces it\n")
        let shown = try runBinary(["ca", "show", "--ca-dir", ca])
        #expect(shown.standardOutput == made.standardOutput)
        let bundle = try runBinary(["ca", "bundle", "--ca-dir", ca])
        #expect(bundle.standardOutput == "\(ca)/bundle.pem\n")
        let key = try FileManager.default.attributesOfItem(atPath: ca + "/ca-key.pem")[.posixPermissions] as? NSNumber
        #expect(key?.intValue == 0o600)
    }

    @Test("audit ca show names a key others can read, and the fix")
    func caKeyReadable() throws {
        let folder = try TemporaryFolder([:])
        let ca = folder.path + "/ca"
        _ = try runBinary(["ca", "init", "--ca-dir", ca])
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: ca + "/ca-key.pem")
        let shown = try runBinary(["ca", "show", "--ca-dir", ca])
        #expect(shown.exitCode == 1)
        #expect(
            shown.standardError
                == "audit ca: \(ca)/ca-key.pem: the CA's private key is readable by other users (mode 640); "
                + "run 'chmod 600 \(ca)/ca-key.pem', or make a new CA\n")
    }

    /// An environment without the trust settings of the user's own that `audit env` keeps.
    static let noTrustSettings: [String: String?] = Dictionary(
        uniqueKeysWithValues: [
            "SSL_CERT_FILE", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GIT_SSL_CAINFO", "PIP_CERT",
            "NPM_CONFIG_CAFILE", "CARGO_HTTP_CAINFO", "NODE_EXTRA_CA_CERTS", "DENO_CERT",
        ].map { ($0, nil) })

    @Test("audit env prints every variable tools read, as shell lines, in a fixed order")
    func envLines() throws {
        let folder = try TemporaryFolder([:])
        let ca = folder.path + "/ca"
        let run = try runBinary(
            ["env", "--ca-dir", ca, "--proxy", "http://127.0.0.1:9999"], environment: Self.noTrustSettings)
        #expect(run.exitCode == 0, "\(run.standardError)")
        let proxy = "'http://127.0.0.1:9999'"
        let bundle = "'\(ca)/bundle.pem'"
        let certificate = "'\(ca)/ca.pem'"
        #expect(
            run.outputLines == [
                "export HTTP_PROXY=\(proxy)", "export http_proxy=\(proxy)", "export HTTPS_PROXY=\(proxy)",
                "export https_proxy=\(proxy)", "export NO_PROXY=''", "export no_proxy=''",
                "export NODE_USE_ENV_PROXY='1'",
                "export SSL_CERT_FILE=\(bundle)", "export REQUESTS_CA_BUNDLE=\(bundle)",
                "export CURL_CA_BUNDLE=\(bundle)",
                "export GIT_SSL_CAINFO=\(bundle)", "export PIP_CERT=\(bundle)", "export NPM_CONFIG_CAFILE=\(bundle)",
                "export CARGO_HTTP_CAINFO=\(bundle)", "export NODE_EXTRA_CA_CERTS=\(certificate)",
                "export DENO_CERT=\(certificate)",
            ])
    }

    @Test("audit env names the files of a relative --ca-dir by absolute paths, which hold from any folder")
    func envRelativeFolder() throws {
        let folder = try TemporaryFolder([:])
        let run = try runBinary(
            ["env", "--ca-dir", "./trust/../ca/", "--proxy", "http://127.0.0.1:9999"], in: folder.url,
            environment: Self.noTrustSettings)
        #expect(run.exitCode == 0, "\(run.standardError)")
        #expect(run.outputLines.contains("export SSL_CERT_FILE='\(folder.path)/ca/bundle.pem'"), "\(run.outputLines)")
        #expect(run.outputLines.contains("export NODE_EXTRA_CA_CERTS='\(folder.path)/ca/ca.pem'"), "\(run.outputLines)")
        #expect(FileManager.default.fileExists(atPath: folder.path + "/ca/ca.pem"))
    }

    @Test(
        "audit env reads a bare HOST:PORT as http://HOST:PORT and keeps a proxy URL as given",
        arguments: [
            ("127.0.0.1:8080", "http://127.0.0.1:8080"), ("localhost:3128", "http://localhost:3128"),
            ("[::1]:8080", "http://[::1]:8080"), ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/"),
            ("HTTPS://proxy.test:443", "HTTPS://proxy.test:443"),
        ])
    func envProxySpellings(_ given: String, _ exported: String) throws {
        let folder = try TemporaryFolder([:])
        let run = runInProcess(["env", "--ca-dir", folder.path + "/ca", "--proxy", given])
        #expect(run.exitCode == 0, "\(run.standardError)")
        #expect(run.outputLines.prefix(2) == ["export HTTP_PROXY='\(exported)'", "export http_proxy='\(exported)'"])
    }

    @Test(
        "audit env refuses a proxy that is not an http(s) URL with a port, and writes no CA (exit 64)",
        arguments: [
            "notaurl", "http://127.0.0.1:99999", "http://127.0.0.1:0", "http://proxy.test", "socks5://127.0.0.1:1080",
            "http://127.0.0.1:8080/path", "http://user:secret@127.0.0.1:8080", "http://:8080", "",
        ])
    func envRefusesProxy(_ given: String) throws {
        let folder = try TemporaryFolder([:])
        let run = runInProcess(["env", "--ca-dir", folder.path + "/ca", "--proxy", given])
        #expect(run.exitCode == 64)
        #expect(
            run.standardError.hasPrefix(
                "Error: --proxy: expected the proxy's URL with its port, such as http://127.0.0.1:8080, got '\(given)'\n"
            ))
        #expect(run.standardOutput == "")
        #expect(!FileManager.default.fileExists(atPath: folder.path + "/ca"))
    }

    @Test("audit env keeps a bundle the user set: the variables name one that holds it, the system roots and the CA")
    func envKeepsUserBundle() throws {
        let folder = try TemporaryFolder([
            "corporate.pem": "-----BEGIN CERTIFICATE-----\ncorporate\n-----END CERTIFICATE-----\n"
        ])
        let ca = folder.path + "/ca"
        let run = try runBinary(
            ["env", "--ca-dir", ca], environment: ["REQUESTS_CA_BUNDLE": folder.path + "/corporate.pem"])
        #expect(run.exitCode == 0, "\(run.standardError)")
        #expect(run.outputLines.contains("export REQUESTS_CA_BUNDLE='\(ca)/env-bundle.pem'"))
        #expect(run.outputLines.contains("export SSL_CERT_FILE='\(ca)/env-bundle.pem'"))
        let combined = try String(contentsOfFile: ca + "/env-bundle.pem", encoding: .utf8)
        let certificate = try String(contentsOfFile: ca + "/ca.pem", encoding: .utf8)
        #expect(combined.contains("corporate\n"))
        #expect(combined.hasSuffix(certificate))
        #expect(combined.count > 10_000)  // the system's roots
    }

    @Test("audit env run again in the environment it printed writes the same bundles, each certificate once")
    func envAgainIsTheSame() throws {
        let folder = try TemporaryFolder([
            "corporate.pem": "-----BEGIN CERTIFICATE-----\ncorporate\n-----END CERTIFICATE-----\n"
        ])
        let ca = folder.path + "/ca"
        let corporate = folder.path + "/corporate.pem"
        var environment: [String: String?] = ["REQUESTS_CA_BUNDLE": corporate, "NODE_EXTRA_CA_CERTS": corporate]
        var bundles: [[String]] = []
        for _ in 0..<3 {
            let run = try runBinary(["env", "--ca-dir", ca], environment: environment)
            #expect(run.exitCode == 0, "\(run.standardError)")
            for line in run.outputLines {
                // export NAME='VALUE' (no quote inside these values)
                let assignment = line.dropFirst("export ".count).split(separator: "=", maxSplits: 1)
                environment[String(assignment[0])] = String(assignment[1].dropFirst().dropLast())
            }
            bundles.append(
                try ["env-bundle.pem", "env-extra.pem"].map {
                    try String(contentsOfFile: ca + "/" + $0, encoding: .utf8)
                })
        }
        let certificate = try String(contentsOfFile: ca + "/ca.pem", encoding: .utf8)
        #expect(bundles[1] == bundles[0] && bundles[2] == bundles[0])
        #expect(bundles[0][1] == "-----BEGIN CERTIFICATE-----\ncorporate\n-----END CERTIFICATE-----\n" + certificate)
        #expect(bundles[0][0].components(separatedBy: "corporate").count == 2)
        #expect(bundles[0][0].components(separatedBy: certificate).count == 2)
    }

    @Test("audit run passes the command's output and exit status through, and summarizes its requests in one line")
    func runSummarizes() throws {
        let origin = try Self.variable("NGINX_TLS_URL")
        let folder = try RunFolder(rules: "[block] field=path\nadmin ^/admin\n")
        let log = folder.log
        // A child of a child: the environment is inherited.
        let script = """
            curl -sS -o /dev/null -w '%{http_code}\\n' \(origin)/small.txt
            sh -c "curl -sS -o /dev/null -w '%{http_code}\\n' \(origin)/admin/x"
            python3 -c "import requests; print(requests.get('\(origin)/page.html').status_code)"
            exit 7
            """
        let run = try folder.run(["sh", "-c", script])
        #expect(run.exitCode == 7, "\(run.standardError)")
        #expect(run.standardOutput == "200\n403\n200\n")
        #expect(
            run.standardError.hasSuffix("audit: 3 requests · 1 blocked (p/admin) · log \(log)\n"),
            "\(run.standardError)")
        let lines = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n")
        #expect(lines.count == 6)
    }

    @Test("Node through audit run trusts the minted leaves by NODE_EXTRA_CA_CERTS")
    func runNode() throws {
        let origin = try Self.variable("NGINX_TLS_URL")
        let folder = try RunFolder(rules: "[block] field=path\nadmin ^/admin\n")
        // Node 24 and later read HTTPS_PROXY themselves (NODE_USE_ENV_PROXY=1, which audit run sets);
        // before, the script opens the CONNECT itself. Either way Node's own TLS verifies the leaf.
        let script = #"""
            const http = require('http'), tls = require('tls');
            const target = new URL(process.argv[1]);
            if (Number(process.versions.node.split('.')[0]) >= 24) {
              fetch(target).then(r => console.log('HTTP/1.1', r.status), e => console.log('error', e.cause?.code));
            } else {
              const proxy = new URL(process.env.HTTPS_PROXY);
              const connect = http.request({ host: proxy.hostname, port: proxy.port, method: 'CONNECT',
                path: `${target.hostname}:${target.port}` });
              connect.on('connect', (answer, socket) => {
                const secure = tls.connect({ socket, host: target.hostname }, () => {
                  secure.write(`GET ${target.pathname} HTTP/1.1\r\nHost: ${target.host}\r\nConnection: close\r\n\r\n`);
                });
                let text = '';
                secure.on('data', chunk => text += chunk);
                secure.on('end', () => console.log(text.split('\r\n')[0].split(' ').slice(0, 2).join(' ')));
                secure.on('error', error => console.log('error', error.code));
              });
              connect.end();
            }
            """#
        let run = try folder.run(["node", "-e", script, origin + "/small.txt"])
        #expect(run.exitCode == 0, "\(run.standardError)")
        #expect(run.standardOutput == "HTTP/1.1 200\n")
        let blocked = try folder.run(["node", "-e", script, origin + "/admin/x"])
        #expect(blocked.standardOutput == "HTTP/1.1 403\n")
    }

    @Test(
        "audit run notes that a Node before 24, run directly or by a script's #! line, sends around the proxy",
        arguments: [false, true])
    func runNodeBypassNote(asScript: Bool) throws {
        let folder = try RunFolder(rules: "[record]\nall .\n")
        let origin = try Self.variable("HTTPBIN_URL")
        let program = "fetch(process.argv[process.argv.length - 1]).then(r => console.log(r.status))"
        let command: [String]
        if asScript {
            let script = folder.folder.path + "/fetch.js"
            try "#!/usr/bin/env node\n\(program)\n".write(toFile: script, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script)
            command = [script, origin + "/get"]
        } else {
            command = ["node", "-e", program, origin + "/get"]
        }
        let run = try folder.run(command)
        let version = try Self.nodeVersion()
        let records = try AuditLogReader.read(atPath: folder.log).records
        #expect(run.standardOutput == "200\n")
        if let major = Int(version.dropFirst().prefix { $0 != "." }), major < 24 {
            // The request went around the proxy: nothing decided or recorded, as the note says.
            #expect(run.standardError.hasPrefix("audit run: note: Node \(version) does not read HTTP_PROXY"))
            #expect(records.isEmpty)
        } else {
            #expect(!run.standardError.contains("note: Node"))
            #expect(records.count == 1)
        }
    }

    /// What this machine's `node --version` prints (`v20.20.2`).
    static func nodeVersion() throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["node", "--version"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let printed = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return String(decoding: printed, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test("audit run gives no Node note for a command that is not Node")
    func runNoNodeNote() throws {
        let folder = try RunFolder(rules: "[record]\nall .\n")
        let run = try folder.run(["curl", "-s", "-o", "/dev/null", try Self.variable("HTTPBIN_URL") + "/get"])
        #expect(run.exitCode == 0)
        #expect(!run.standardError.contains("note:"))
    }

    @Test(
        "git clones (smart HTTP, git http-backend) and pip downloads over HTTPS through audit run, and a path rule refuses one package"
    )
    func runGitAndPip() throws {
        let origin = try Self.variable("NGINX_TLS_URL")
        let folder = try RunFolder(rules: "[block] field=path\nunvetted ^/simple/unvetted-package\n")
        let script = """
            git clone -q \(origin)/smart/repo.git clone && cat clone/README
            pip download -q --no-cache-dir --no-deps --index-url \(origin)/simple/ -d downloads audit-probe \
                && ls downloads
            pip download -q --no-cache-dir --no-deps --retries 0 --index-url \(origin)/simple/ -d downloads \
                unvetted-package 2>/dev/null || echo refused
            """
        let run = try folder.run(["sh", "-c", script])
        #expect(run.exitCode == 0, "\(run.standardError)")
        #expect(run.standardOutput == "probe\naudit_probe-1.0-py3-none-any.whl\nrefused\n")
        #expect(run.standardError.contains(" blocked (p/unvetted) · log "), "\(run.standardError)")
        // git's smart HTTP: its POSTs to git-upload-pack were decided inside TLS, one record each.
        let records = try AuditLogReader.read(atPath: folder.log).records
        #expect(records.contains { $0.request.method == "POST" && $0.request.url.hasSuffix("/git-upload-pack") })
    }

    @Test("audit run counts a tunnel it does not intercept as one request, as it has one record")
    func runCountsSplicedTunnels() throws {
        let folder = try RunFolder(rules: "[block] field=path\nadmin ^/admin\n")
        // Port 443 of the loopback, where nothing listens: each tunnel is decided, then fails to connect.
        let script =
            "for path in small.txt admin/x; do curl -sk -o /dev/null -w '%{http_code}\\n' https://127.0.0.1/$path; done"
        let run = try folder.run(["sh", "-c", script], options: ["--tls-passthrough", "127.0.0.1"])
        #expect(run.standardOutput == "000\n000\n")
        #expect(run.standardError.hasSuffix("audit: 2 requests · log \(folder.log)\n"), "\(run.standardError)")
        let records = try AuditLogReader.read(atPath: folder.log).records
        #expect(records.map(\.request.method) == ["CONNECT", "CONNECT"])
    }

    @Test("audit run counts a tunnel whose TLS handshake the client ended as one request, as it has one record")
    func runCountsFailedHandshakes() throws {
        let origin = try Self.variable("NGINX_TLS_URL")
        let folder = try RunFolder(rules: "[block] field=path\nadmin ^/admin\n")
        // curl told to trust only the test CA does not trust the minted leaf: it ends the handshake.
        let ca = try Self.variable("NGINX_CA")
        let run = try folder.run([
            "sh", "-c", "curl -s --cacert \(ca) -o /dev/null -w '%{http_code}\\n' \(origin)/small.txt",
        ])
        #expect(run.standardOutput == "000\n")
        #expect(run.standardError.contains("does not trust the audit CA"), "\(run.standardError)")
        #expect(run.standardError.hasSuffix("audit: 1 request · log \(folder.log)\n"), "\(run.standardError)")
        let records = try AuditLogReader.read(atPath: folder.log).records
        #expect(records.map(\.request.method) == ["CONNECT"])
        #expect(records.first?.outcome.kind == .failure)
    }

    @Test("audit run with a relative --ca-dir hands the command absolute paths: it trusts the CA from another folder")
    func runRelativeCAFolder() throws {
        let origin = try Self.variable("NGINX_TLS_URL")
        let folder = try RunFolder(rules: "[block] field=path\nadmin ^/admin\n")
        try FileManager.default.createDirectory(atPath: folder.folder.path + "/sub", withIntermediateDirectories: true)
        let script = """
            cd sub && curl -sS -o /dev/null -w '%{http_code}\\n' \(origin)/small.txt
            echo "$SSL_CERT_FILE $NODE_EXTRA_CA_CERTS"
            """
        let run = try folder.run(["sh", "-c", script], options: ["--ca-dir", "./ca"])
        #expect(run.exitCode == 0, "\(run.standardError)")
        let ca = folder.folder.path + "/ca"
        let stores = run.standardOutput.split(separator: "\n").last?.split(separator: " ").map(String.init) ?? []
        #expect(run.standardOutput.hasPrefix("200\n"), "\(run.standardError)")
        #expect(stores.first?.hasPrefix(ca + "/") == true, "\(stores)")
        #expect(stores.last?.hasPrefix(ca + "/") == true, "\(stores)")
    }

    @Test("audit run keeps the command in its own process group, where a terminal's Ctrl-C reaches it")
    func runProcessGroup() throws {
        let folder = try RunFolder(rules: "[record]\nall .\n")
        // Field 5 of /proc/PID/stat is the process group; audit (started by Foundation) leads its own.
        let run = try folder.run(["sh", "-c", "echo $(cut -d' ' -f5 /proc/$$/stat) $PPID"])
        let fields = run.standardOutput.split(separator: " ").map { $0.trimmingCharacters(in: .whitespacesAndNewlines) }
        #expect(fields.count == 2)
        #expect(fields.first == fields.last, "process group and audit's pid: \(fields)")
    }

    @Test("a command ended by a signal makes audit run exit 128 plus the signal, with its summary")
    func runSignalStatus() throws {
        let folder = try RunFolder(rules: "[record]\nall .\n")
        let run = try folder.run(["sh", "-c", "kill -TERM $$"])
        #expect(run.exitCode == 143)
        #expect(run.standardError.hasSuffix("audit: 0 requests · log \(folder.log)\n"), "\(run.standardError)")
    }

    @Test(
        "a command audit run cannot start makes it exit as a shell would: 127 when there is none, 126 when it is no program",
        arguments: [
            ("no-such-command-here", Int32(127), "No such file or directory"),
            ("./policies/p.rules", Int32(126), "Permission denied"),
            ("./policies", Int32(126), "Permission denied"),
        ])
    func runCommandThatCannotStart(_ command: String, status: Int32, reason: String) throws {
        let folder = try RunFolder(rules: "[record]\nall .\n")
        let run = try folder.run([command])
        #expect(run.exitCode == status)
        #expect(run.standardError == "audit run: cannot run '\(command)': \(reason)\n")
    }

    @Test(
        "audit run takes the command after -- or after its own options, and passes every later argument on, -- and options included",
        arguments: [
            (["--", "printf", "[%s]", "-s", "--", "--log", "x"], "[-s][--][--log][x]"),
            (["printf", "[%s]", "-s", "--", "--log", "x"], "[-s][--][--log][x]"),
            (["--warn", "allow", "printf", "[%s]", "--policies"], "[--policies]"),
            (["--intercept-tls", "printf", "[%s]", "a"], "[a]"),
            (["--intercept-tls", "--tls-passthrough", "pinned.example", "printf", "[%s]", "-s"], "[-s]"),
            (
                [
                    "--intercept-tls", "--tls-passthrough", "a.example,b.example", "--tls-passthrough", "c.example",
                    "echo",
                ],
                "\n"
            ),
        ])
    func runCommandSpellings(_ arguments: [String], printed: String) throws {
        let folder = try RunFolder(rules: "[record]\nall .\n")
        let run = try runBinary(
            ["run", "--policies", folder.folder.path + "/policies", "--log", folder.log] + arguments,
            in: folder.folder.url)
        #expect(run.exitCode == 0, "\(run.standardError)")
        #expect(run.standardOutput == printed)
        #expect(run.standardError.hasSuffix("audit: 0 requests · log \(folder.log)\n"), "\(run.standardError)")
    }

    @Test("audit run without a command is a usage error")
    func runNeedsCommand() throws {
        let run = try runBinary(["run", "--policies", "policies"])
        #expect(run.exitCode == 64)
        #expect(run.standardError.contains("name the command to run after --"))
    }

    @Test(
        "audit run --help and -h print audit run's help, not an attempt to run '--help'", arguments: ["--help", "-h"])
    func runHelp(_ flag: String) throws {
        let run = try runBinary(["run", flag])
        #expect(run.exitCode == 0, "\(run.standardError)")
        #expect(run.standardOutput.hasPrefix("OVERVIEW: Run a command with its requests audited by a proxy of its own"))
        #expect(run.standardOutput.contains("--policies <policies>"))
        #expect(run.standardError == "")
    }

    @Test("an option audit run does not know, before the command, is a usage error that names it")
    func runUnknownOption() throws {
        let run = try runBinary(["run", "--polices", "policies", "--", "true"])
        #expect(run.exitCode == 64)
        #expect(
            run.standardError.contains(
                "unknown option '--polices': audit run's options come before the command, which follows --"),
            "\(run.standardError)")
    }

    @Test(
        "an --upstream-ca file that is missing, a folder or not PEM stops the proxy with a message that names it and why",
        arguments: [
            ("/nonexistent/roots.pem", "/nonexistent/roots.pem: no such file"),
            ("/tmp", "/tmp: it is a folder"),
            ("/etc/hostname", "/etc/hostname: no certificate in PEM here"),
        ])
    func upstreamRootsUnusable(_ file: String, message: String) throws {
        let run = try runBinary(["proxy", "--listen", "127.0.0.1:0", "--intercept-tls", "--upstream-ca", file])
        #expect(run.exitCode == 1)
        #expect(run.standardError.hasPrefix("audit proxy: " + message), "\(run.standardError)")
    }

    @Test(
        "a --tls-passthrough value that names no host is a usage error that names it",
        arguments: [
            (
                ["proxy", "--intercept-tls", "--tls-passthrough", "a.example", "https://pinned.example"],
                "https://pinned.example"
            ),
            (
                ["run", "--intercept-tls", "--tls-passthrough", "a.example,pinned.example:443", "true"],
                "pinned.example:443"
            ),
        ])
    func passthroughNamesNoHost(_ arguments: [String], pattern: String) throws {
        let run = try runBinary(arguments)
        #expect(run.exitCode == 64)
        #expect(
            run.standardError.contains("--tls-passthrough: '\(pattern)' is not a passthrough host: write a host name"),
            "\(run.standardError)")
    }
}
