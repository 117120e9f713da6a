import AuditPipeline
import AuditPolicy
import AuditProxy
import AuditReport
import Foundation
import NIOConcurrencyHelpers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The local servers `Tests/with-httpbin.sh` starts.
enum Servers {
    static func variable(_ name: String) throws -> String {
        try #require(
            ProcessInfo.processInfo.environment[name], "\(name) is not set: run the tests with `make test`")
    }

    static var nginx: String { get throws { try variable("NGINX_URL") } }
    static var nginxTLS: String { get throws { try variable("NGINX_TLS_URL") } }
    static var nginxCA: String { get throws { try variable("NGINX_CA") } }
    static var httpbin: String { get throws { try variable("HTTPBIN_URL") } }
}

/// A proxy on a free loopback port, with its own policy and audit log, for one test.
final class RunningProxy: Sendable {
    let server: ProxyServer
    let logPath: String
    let folder: String

    /// A proxy deciding by `rules` (one rule file, category `p`); its problem lines go to `reported`.
    init(
        rules: String, reported: ReportedLines? = nil, adjust: (inout ProxyConfiguration) -> Void = { _ in }
    ) async throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("proxy-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder + "/policies", withIntermediateDirectories: true)
        try Data(rules.utf8).write(to: URL(fileURLWithPath: folder + "/policies/p.rules"))
        logPath = folder + "/audit.jsonl"
        var configuration = ProxyConfiguration()
        configuration.port = 0
        configuration.threads = 2
        configuration.pipeline.logPath = logPath
        // The test servers listen on free ports, not 443.
        configuration.connectPorts = nil
        adjust(&configuration)
        let pipeline = try AuditPipeline(
            policy: Policy(directory: folder + "/policies"), configuration: configuration.pipeline)
        server = ProxyServer(
            configuration: configuration, pipeline: pipeline, report: { line in reported?.append(line) })
        try await server.start()
    }

    var address: String { "http://127.0.0.1:\(server.port ?? 0)" }

    /// Stops the proxy (draining) and returns every record it logged.
    func finish() async throws -> [AuditRecord] {
        await server.stop()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        return try AuditLogReader.read(atPath: logPath).records
    }
}

/// The problem lines a proxy reported (its standard error in `audit proxy`).
final class ReportedLines: Sendable {
    private let lines = NIOLockedValueBox<[String]>([])

    func append(_ line: String) { lines.withLockedValue { $0.append(line) } }

    var all: [String] { lines.withLockedValue { $0 } }
}

/// The `Host` header a request to `url` carries: its authority (`127.0.0.1:PORT`).
func hostHeader(of url: String) -> String {
    let afterScheme = url.split(separator: "://", maxSplits: 1).last ?? ""
    return String(afterScheme.prefix { $0 != "/" })
}

/// A raw response split at its blank line.
func split(_ response: String) -> (head: String, body: String)? {
    guard let end = response.range(of: "\r\n\r\n") else { return nil }
    return (String(response[..<end.upperBound]), String(response[end.upperBound...]))
}

/// A loopback port nothing listens on now.
func freeLoopbackPort() throws -> Int {
    let run = try runClient(
        "python3",
        ["-c", "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"])
    return try #require(Int(run.output.trimmingCharacters(in: .whitespacesAndNewlines)))
}

/// What a client program printed and returned.
struct ClientRun {
    let status: Int32
    let output: String
    let errors: String
}

/// Runs a real client (curl, python3, chromium) to its end, without proxy settings of the
/// environment except those given.
func runClient(_ tool: String, _ arguments: [String], environment: [String: String] = [:]) throws -> ClientRun {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = [tool] + arguments
    var variables = ProcessInfo.processInfo.environment.filter { !$0.key.lowercased().hasSuffix("_proxy") }
    variables.merge(environment) { $1 }
    process.environment = variables
    let output = Pipe()
    let errors = Pipe()
    process.standardOutput = output
    process.standardError = errors
    try process.run()
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    let errorData = errors.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return ClientRun(
        status: process.terminationStatus, output: String(decoding: outputData, as: UTF8.self),
        errors: String(decoding: errorData, as: UTF8.self))
}

/// A raw TCP connection to the proxy, for requests no well-behaved client sends.
final class RawConnection {
    private var socket: Int32

    init(port: Int, receiveBuffer: Int32? = nil) throws {
        socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        if var size = receiveBuffer {
            setsockopt(socket, SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(socket, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        var timeout = timeval(tv_sec: 20, tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        try #require(connected == 0, "cannot connect to 127.0.0.1:\(port)")
    }

    deinit { close() }

    /// Closes the connection (once).
    func close() {
        guard socket >= 0 else { return }
        Glibc.close(socket)
        socket = -1
    }

    func send(_ text: String) {
        _ = text.utf8CString.withUnsafeBufferPointer { Glibc.send(socket, $0.baseAddress, $0.count - 1, 0) }
    }

    /// Everything the proxy sends until it closes the connection (or 20 s pass).
    func readToEnd() -> String {
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let count = recv(socket, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            received += buffer[0..<count]
        }
        return String(decoding: received, as: UTF8.self)
    }

    /// Reads one response with a `Content-Length` body, slowly (`pause` between reads of at most
    /// 16 KiB, so the proxy keeps finding this client full); returns the head and the body's size.
    func readSlowly(pause: Duration) -> (head: String, bodyBytes: Int) {
        var received = [UInt8]()
        var buffer = [UInt8](repeating: 0, count: 16_384)
        var head: String?
        var expected = Int.max
        var bodyStart = 0
        while received.count - bodyStart < expected {
            let count = recv(socket, &buffer, buffer.count, 0)
            guard count > 0 else { break }
            received += buffer[0..<count]
            if head == nil,
                let end = received.indices.dropLast(3).first(where: {
                    received[$0] == 13 && received[$0 + 1] == 10 && received[$0 + 2] == 13 && received[$0 + 3] == 10
                })
            {
                let text = String(decoding: received[..<end], as: UTF8.self)
                head = text
                bodyStart = end + 4
                let length = text.split(separator: "\r\n").first { $0.lowercased().hasPrefix("content-length:") }
                expected = length.flatMap { Int($0.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) } ?? 0
            }
            Thread.sleep(forTimeInterval: Double(pause.components.attoseconds) / 1e18)
        }
        return (head ?? "", received.count - bodyStart)
    }

    /// One read of what the proxy sent so far.
    func readSome() -> String {
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = recv(socket, &buffer, buffer.count, 0)
        return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : ""
    }
}

/// The JSON object of a proxy's answer body.
func jsonObject(_ text: String) throws -> [String: Any] {
    let body = text.range(of: "\r\n\r\n").map { String(text[$0.upperBound...]) } ?? text
    return try #require(try JSONSerialization.jsonObject(with: Data(body.utf8)) as? [String: Any])
}
