import AuditReport
import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A running `audit proxy` (or `audit authz`) process: its port (read from its first line), its
/// stderr, and its log.
final class ProxyProcess {
    let process = Process()
    let port: Int
    /// The first line it printed.
    let firstLine: String
    private let errors = Pipe()
    private let errorText = ErrorText()

    final class ErrorText: @unchecked Sendable {
        // Appended on the pipe's reading thread, read by the test under the lock.
        private let lock = NSLock()
        private var bytes = Data()
        func append(_ more: Data) { lock.withLock { bytes += more } }
        var value: String { lock.withLock { String(decoding: bytes, as: UTF8.self) } }
    }

    /// Starts `audit COMMAND --listen 127.0.0.1:0 ARGUMENTS` in `folder`, with this process's
    /// environment changed by `environment`.
    init(
        command: String = "proxy", arguments: [String], in folder: TemporaryFolder,
        environment: [String: String] = [:]
    ) throws {
        process.executableURL = try auditExecutable()
        process.arguments = [command, "--listen", "127.0.0.1:0"] + arguments
        process.currentDirectoryURL = folder.url
        if !environment.isEmpty {
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // A blocking read on a thread of its own, not `readabilityHandler`: tearing down the
        // dispatch read source that handler installs can crash libdispatch's manager thread
        // (swift-corelibs-libdispatch#949; seen here once as a signal 11 in `_dispatch_event_loop_drain`).
        let errorText = errorText
        let reading = errors.fileHandleForReading
        Thread.detachNewThread {
            while case let more = reading.availableData, !more.isEmpty { errorText.append(more) }
        }
        var line = Data()
        while !line.contains(UInt8(ascii: "\n")) {
            let more = output.fileHandleForReading.availableData
            guard !more.isEmpty else { break }
            line += more
        }
        let text = String(decoding: line, as: UTF8.self)
        firstLine = text
        // "audit proxy listening on 127.0.0.1:PORT — …"
        let address = try #require(
            text.split(separator: " ").dropFirst(4).first, "first line: \(text) \(errorText.value)")
        port = try #require(Int(address.split(separator: ":").last ?? ""))
    }

    var address: String { "http://127.0.0.1:\(port)" }
    var standardError: String { errorText.value }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Waits until stderr contains `text` (at most 10 s).
    func waitForError(containing text: String) async throws {
        for _ in 0..<200 where !standardError.contains(text) { try await Task.sleep(for: .milliseconds(50)) }
    }

    /// The peak resident memory of the proxy process so far, in bytes.
    var peakResidentBytes: Int {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        let line = status.split(separator: "\n").first { $0.hasPrefix("VmHWM:") } ?? ""
        return (line.split(separator: " ").compactMap { Int($0) }.first ?? 0) * 1_024
    }

    /// Sends SIGTERM and returns the exit status; one that has not exited 60 s later is killed
    /// (status 9), so that a stop the process missed fails the test instead of hanging the run.
    func stop() -> Int32 {
        signal(SIGTERM)
        let deadline = Date(timeIntervalSinceNow: 60)
        while process.isRunning, Date() < deadline { usleep(10_000) }
        if process.isRunning { signal(SIGKILL) }
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// Runs curl through `proxy` and returns what it printed.
func curl(_ arguments: [String], through proxy: ProxyProcess) throws -> String {
    String(decoding: try runCurl(["-sS", "-x", proxy.address] + arguments).output, as: UTF8.self)
}

/// A folder with `policies/p.rules` recording every request; returns the folder and the rule file.
private func recordingPolicyFolder() throws -> (TemporaryFolder, URL) {
    let folder = try TemporaryFolder([:])
    try FileManager.default.createDirectory(
        at: folder.url.appendingPathComponent("policies"), withIntermediateDirectories: true)
    let rules = folder.url.appendingPathComponent("policies/p.rules")
    try Data("[record]\nall .\n".utf8).write(to: rules)
    return (folder, rules)
}

func nginx() throws -> String {
    try #require(
        ProcessInfo.processInfo.environment["NGINX_URL"], "NGINX_URL is not set: run the tests with `make test`")
}

@Suite(.serialized) struct ProxyCommandTests {
    @Test(
        "audit proxy --intercept-tls --ca-dir, with the lines audit env prints: curl and requests trust it, and a path rule holds inside HTTPS"
    )
    func interceptWithEnvironment() async throws {
        let (folder, rules) = try recordingPolicyFolder()
        try Data("[block] field=path\nadmin ^/admin\n".utf8).write(to: rules)
        let environment = ProcessInfo.processInfo.environment
        let origin = try #require(environment["NGINX_TLS_URL"], "run the tests with `make test`")
        let upstreamCA = try #require(environment["NGINX_CA"], "run the tests with `make test`")
        let ca = folder.path + "/ca"
        let proxy = try ProxyProcess(
            arguments: ["--intercept-tls", "--ca-dir", ca, "--upstream-ca", upstreamCA, "--log", "audit.jsonl"],
            in: folder)
        let script = """
            eval "$('\(try auditExecutable().path)' env --ca-dir '\(ca)' --proxy \(proxy.address))"
            curl -sS -o /dev/null -w '%{http_code}\\n' \(origin)/small.txt
            curl -sS -o /dev/null -w '%{http_code}\\n' \(origin)/admin/
            python3 -c "import requests; print(requests.get('\(origin)/small.txt').status_code)"
            """
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = ["-c", script]
        shell.environment = environment.filter {
            !$0.key.lowercased().hasSuffix("_proxy") && !$0.key.hasSuffix("CA_BUNDLE")
        }
        let output = Pipe()
        shell.standardOutput = output
        try shell.run()
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        shell.waitUntilExit()
        #expect(proxy.stop() == 0)
        #expect(printed == "200\n403\n200\n", "\(proxy.standardError)")
        let records = try AuditLogReader.read(atPath: folder.path + "/audit.jsonl").records
        #expect(records.filter { $0.request.method == "GET" }.map(\.outcome.kind) == [.response, .blocked, .response])
    }

    @Test(
        "audit proxy and audit authz stop on a SIGTERM sent as soon as they say they listen",
        arguments: ["proxy", "authz"])
    func stopAtOnce(command: String) throws {
        let (folder, _) = try recordingPolicyFolder()
        // Busy cores: the service's own threads then start late, as on a loaded machine, where a
        // stop sent before its signal handling was armed used to be ignored.
        let busy = try (0..<ProcessInfo.processInfo.activeProcessorCount).map { _ in
            let loop = Process()
            loop.executableURL = URL(fileURLWithPath: "/bin/sh")
            loop.arguments = ["-c", "while :; do :; done"]
            try loop.run()
            return loop
        }
        // SIGKILL: a child started from a dispatch thread may inherit SIGTERM blocked.
        defer { for loop in busy { kill(loop.processIdentifier, SIGKILL) } }
        for attempt in 1...10 {
            let status = try ProxyProcess(command: command, arguments: [], in: folder).stop()
            #expect(status == 0, "start \(attempt): the stop was missed, and the service killed 60 s later")
            if status != 0 { break }
        }
    }

    @Test(
        "audit proxy and audit authz say in words that the address they are to listen on is in use",
        arguments: ["proxy", "authz"])
    func addressInUse(_ command: String) throws {
        let (folder, _) = try recordingPolicyFolder()
        let first = try ProxyProcess(arguments: [], in: folder)
        defer { _ = first.stop() }
        let second = try runBinary(
            [command, "--listen", "127.0.0.1:\(first.port)"], in: folder.url)
        #expect(second.exitCode == 1)
        #expect(
            second.standardError
                == "audit \(command): cannot listen on 127.0.0.1:\(first.port): address already in use\n")
    }

    @Test(
        "audit proxy and audit authz say that a host to listen on cannot be resolved, in words",
        arguments: ["proxy", "authz"])
    func listenHostUnknown(_ command: String) throws {
        let (folder, _) = try recordingPolicyFolder()
        let run = try runBinary([command, "--listen", "1.2.3.4.5:8080"], in: folder.url)
        #expect(run.exitCode == 1)
        #expect(
            run.standardError.hasPrefix(
                "audit \(command): cannot listen on 1.2.3.4.5:8080: cannot resolve 1.2.3.4.5: "),
            "\(run.standardError)")
        #expect(!run.standardError.contains("SocketAddressError"))
    }

    @Test(
        "audit proxy and audit authz refuse a port alone to listen on and name the two addresses it may mean",
        arguments: ["proxy", "authz"], ["8080", ":8080"])
    func listenPortAlone(_ command: String, _ listen: String) throws {
        let run = try runBinary([command, "--listen", listen])
        #expect(run.exitCode == 64)
        #expect(
            run.standardError.hasPrefix(
                "Error: --listen: expected HOST:PORT, got '\(listen)' "
                    + "(127.0.0.1:8080 is this machine only, 0.0.0.0:8080 every interface)\n"),
            "\(run.standardError)")
    }

    @Test(
        "audit proxy and audit authz serve connections on as many event-loop threads as --threads says",
        arguments: ["proxy", "authz"], [1, 3])
    func eventLoopThreads(_ command: String, _ threads: Int) throws {
        let (folder, _) = try recordingPolicyFolder()
        let service = try ProxyProcess(command: command, arguments: ["--threads", String(threads)], in: folder)
        defer { _ = service.stop() }
        let tasks = "/proc/\(service.process.processIdentifier)/task"
        let names = try FileManager.default.contentsOfDirectory(atPath: tasks).map { task in
            try String(contentsOfFile: "\(tasks)/\(task)/comm", encoding: .utf8)
        }
        // NIO names its event-loop threads NIO-ELT-<group>-#<n>; the first group is the listener's.
        let loops = Set(names.filter { $0.hasPrefix("NIO-ELT-1-") })
        #expect(loops.count == threads, "\(names.sorted())")
    }

    @Test("--threads 0 is a usage error that names the option", arguments: ["proxy", "authz"])
    func noThreads(_ command: String) throws {
        let run = try runBinary([command, "--listen", "127.0.0.1:0", "--threads", "0"])
        #expect(run.exitCode == 64)
        #expect(
            run.standardError.hasPrefix("Error: --threads: expected a positive number, got 0\n"),
            "\(run.standardError)")
    }

    @Test("SIGHUP reloads the policies; a folder that fails to load keeps the old policy and says where")
    func reloadOnHangup() async throws {
        let (folder, rules) = try recordingPolicyFolder()
        let proxy = try ProxyProcess(arguments: ["--log", "audit.jsonl"], in: folder)
        let url = try nginx() + "/small.txt"
        let before = try curl(["-o", "/dev/null", "-w", "%{http_code}", url], through: proxy)
        try Data("[block]\nsmall /small\\.txt$\n".utf8).write(to: rules)
        proxy.signal(SIGHUP)
        try await proxy.waitForError(containing: "reloaded 1 rule")
        let after = try curl(["-o", "/dev/null", "-w", "%{http_code}", url], through: proxy)
        try Data("[block]\nbroken (unclosed\n".utf8).write(to: rules)
        proxy.signal(SIGHUP)
        try await proxy.waitForError(containing: "failed")
        let kept = try curl(["-o", "/dev/null", "-w", "%{http_code}", url], through: proxy)
        #expect(proxy.stop() == 0)
        #expect(before == "200")
        #expect(after == "403")
        #expect(kept == "403")
        #expect(proxy.standardError.contains("p.rules:2:"), "\(proxy.standardError)")
        let records = try AuditLogReader.read(atPath: folder.path + "/audit.jsonl").records
        #expect(records.map(\.outcome.kind) == [.response, .blocked, .blocked])
    }

    @Test("--watch reloads the policies when a rule file changes")
    func watchReloads() async throws {
        let (folder, rules) = try recordingPolicyFolder()
        let proxy = try ProxyProcess(arguments: ["--watch"], in: folder)
        let url = try nginx() + "/small.txt"
        try await Task.sleep(for: .milliseconds(1_100))
        try Data("[block]\nsmall /small\\.txt$\n".utf8).write(to: rules)
        var answer = ""
        for _ in 0..<40 {
            answer = try curl(["-o", "/dev/null", "-w", "%{http_code}", url], through: proxy)
            if answer == "403" { break }
            try await Task.sleep(for: .milliseconds(250))
        }
        #expect(proxy.stop() == 0)
        #expect(answer == "403")
    }

    @Test("SIGTERM lets the request in flight finish, flushes the log and exits 0")
    func stopOnTerminate() async throws {
        let (folder, _) = try recordingPolicyFolder()
        let proxy = try ProxyProcess(arguments: ["--log", "audit.jsonl"], in: folder)
        let httpbin = try #require(ProcessInfo.processInfo.environment["HTTPBIN_URL"])
        // A client that says when the response's head has come (httpbin sends it at once, then drips
        // the body over a second), so that the stop comes with the request surely in flight.
        let script = """
            import http.client, sys, urllib.parse
            proxy = urllib.parse.urlsplit(sys.argv[1])
            connection = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=10)
            connection.request("GET", sys.argv[2])
            response = connection.getresponse()
            print("head", flush=True)
            sys.stdout.write(response.read().decode())
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", script, proxy.address, httpbin + "/drip?duration=1&numbytes=4&delay=0"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var received = Data()
        while !received.starts(with: Data("head\n".utf8)) {
            let piece = output.fileHandleForReading.availableData
            if piece.isEmpty { break }
            received += piece
        }
        let status = proxy.stop()
        received += output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let body = String(decoding: received, as: UTF8.self).replacingOccurrences(of: "head\n", with: "")
        #expect(status == 0)
        #expect(body == "****")
        let records = try AuditLogReader.read(atPath: folder.path + "/audit.jsonl").records
        #expect(records.map(\.outcome.bytes) == [4])
        #expect(proxy.standardError.contains("stopped after 1 request"))
    }

    @Test("a 300 MB download streams through the proxy whole, without the proxy holding it in memory")
    func largeDownload() async throws {
        let (folder, _) = try recordingPolicyFolder()
        let proxy = try ProxyProcess(arguments: [], in: folder)
        let received = try curl(
            ["-o", "/dev/null", "-w", "%{http_code} %{size_download}", try nginx() + "/big.bin"], through: proxy)
        let peak = proxy.peakResidentBytes
        #expect(proxy.stop() == 0)
        #expect(received == "200 300000000")
        // Streaming keeps the proxy far below the body's size (make bench measures it exactly).
        #expect(peak < 100_000_000, "peak RSS \(peak / 1_048_576) MB")
    }

    @Test("a 200 MB upload is recorded and replayed (matched on its digest as it comes) without the proxy holding it")
    func largeUploadReplayed() throws {
        let (folder, _) = try recordingPolicyFolder()
        let upload = folder.path + "/upload.bin"
        try Data(count: 200_000_000).write(to: URL(fileURLWithPath: upload))
        let url = try #require(ProcessInfo.processInfo.environment["RAW_URL"]) + "/read-body"
        let post = ["-H", "Expect:", "--data-binary", "@" + upload, "-w", " %{http_code}", url]
        let har = folder.path + "/session.har"
        let recording = try ProxyProcess(arguments: ["--record", har], in: folder)
        let recorded = try curl(post, through: recording)
        #expect(recording.stop() == 0)
        let replaying = try ProxyProcess(arguments: ["--replay", har], in: folder)
        let replayed = try curl(post, through: replaying)
        let peak = replaying.peakResidentBytes
        #expect(replaying.stop() == 0)
        #expect(recorded == "read 200000000 bytes 200")
        #expect(replayed == recorded)
        #expect(peak < 100_000_000, "peak RSS \(peak / 1_048_576) MB")
    }

    @Test("--on-miss record sends a miss to the server and adds it to the recording, which the next replay answers")
    func newEpisodes() throws {
        let (folder, _) = try recordingPolicyFolder()
        let har = folder.path + "/session.har"
        let (small, page) = (try nginx() + "/small.txt", try nginx() + "/page.html")
        let recording = try ProxyProcess(arguments: ["--record", har], in: folder)
        _ = try curl([small], through: recording)
        #expect(recording.stop() == 0)
        let episodes = try ProxyProcess(arguments: ["--replay", har, "--on-miss", "record"], in: folder)
        let missed = try curl([page], through: episodes)
        #expect(episodes.stop() == 0)
        let replaying = try ProxyProcess(arguments: ["--replay", har], in: folder)
        let replayed = try curl([page, "-w", " %{http_code}"], through: replaying)
        #expect(replaying.stop() == 0)
        #expect(missed.contains("<html"))
        #expect(replayed == missed + " 200")
        let records = try AuditLogReader.read(atPath: folder.path + "/audit.jsonl").records
        #expect(records.map(\.outcome.kind) == [.response, .response, .replayed])
    }

    @Test("--on-miss record without --replay is a usage error that says what it needs")
    func newEpisodesNeedRecording() throws {
        let run = try runBinary(["proxy", "--listen", "127.0.0.1:0", "--on-miss", "record"])
        #expect(run.exitCode == 64)
        #expect(
            run.standardError.contains("--on-miss record adds to a recording: name it with --replay FILE.har"),
            "\(run.standardError)")
    }
}

/// A free TCP port on 127.0.0.1 (bound, read, and released).
func freePort() throws -> Int {
    let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(socket) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
            bind(socket, socketAddress, length) == 0 && getsockname(socket, socketAddress, &length) == 0
        }
    }
    try #require(bound, "cannot bind a port")
    return Int(UInt16(bigEndian: address.sin_port))
}

/// What `curl URL` prints (no proxy).
private func fetch(_ url: String) throws -> String {
    String(decoding: try runCurl(["-sS", "--noproxy", "*", url]).output, as: UTF8.self)
}

@Suite struct ProxyMetricsTests {
    @Test("a real Prometheus server scrapes audit proxy --metrics and its query API returns the counters")
    func prometheusScrapes() async throws {
        let folder = try TemporaryFolder([:])
        try FileManager.default.createDirectory(
            at: folder.url.appendingPathComponent("policies"), withIntermediateDirectories: true)
        try Data(
            "[block]\nno ^http://blocked\\.invalid/\n[respond 200] body=ok\nmock ^http://mock\\.invalid/\n".utf8
        ).write(to: folder.url.appendingPathComponent("policies/p.rules"))
        let proxy = try ProxyProcess(arguments: ["--metrics", "127.0.0.1:0"], in: folder)
        defer { _ = proxy.stop() }
        try await proxy.waitForError(containing: "/metrics")
        let metricsURL = try #require(
            proxy.standardError.split(separator: " ").first { $0.hasPrefix("http://") && $0.contains("/metrics") })
        let target = metricsURL.dropFirst("http://".count).split(separator: "/").first ?? ""
        for _ in 0..<3 { _ = try curl(["http://blocked.invalid/x"], through: proxy) }
        for _ in 0..<2 { _ = try curl(["http://mock.invalid/health"], through: proxy) }

        let prometheusPort = try freePort()
        try Data(
            """
            global:
              scrape_interval: 1s
            scrape_configs:
              - job_name: audit
                static_configs:
                  - targets: ["\(target)"]
            """.utf8
        ).write(to: folder.url.appendingPathComponent("prometheus.yml"))
        let prometheus = Process()
        prometheus.executableURL = URL(fileURLWithPath: "/usr/bin/prometheus")
        prometheus.arguments = [
            "--config.file=\(folder.path)/prometheus.yml", "--storage.tsdb.path=\(folder.path)/data",
            "--web.listen-address=127.0.0.1:\(prometheusPort)",
        ]
        prometheus.standardOutput = FileHandle.nullDevice
        prometheus.standardError = FileHandle.nullDevice
        try prometheus.run()
        defer {
            prometheus.terminate()
            prometheus.waitUntilExit()
        }

        func query(_ expression: String) throws -> String? {
            let encoded = expression.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? expression
            let text = try fetch("http://127.0.0.1:\(prometheusPort)/api/v1/query?query=\(encoded)")
            guard let object = try? JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any],
                let data = object["data"] as? [String: Any], let result = data["result"] as? [[String: Any]],
                let value = result.first?["value"] as? [Any]
            else { return nil }
            return value.last as? String
        }
        var blocked: String?
        for _ in 0..<60 {
            blocked = try query(#"audit_requests_total{verdict="block"}"#)
            if blocked == "3" { break }
            try await Task.sleep(for: .milliseconds(500))
        }
        #expect(blocked == "3")
        #expect(try query(#"audit_requests_total{verdict="respond"}"#) == "2")
        #expect(try query(#"audit_rule_requests_total{rule="p/mock",category="p",verdict="respond"}"#) == "2")
        #expect(try query(#"audit_request_duration_seconds_count{outcome="blocked"}"#) == "3")
        #expect(try query("audit_decision_duration_seconds_count") == "5")
    }
}
