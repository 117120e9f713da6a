import AuditPipeline
import AuditPolicy
import AuditReport
import Foundation
import NIOConcurrencyHelpers
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Testing

@testable import AuditProxy

/// One client connection of the proxy on in-memory channels: the client's bytes go in as written,
/// the proxy's answer comes out as bytes, and every server connection the proxy makes is an
/// `EmbeddedChannel` the test reads and answers. The proxy's handlers and the pipeline are the
/// real ones; only the sockets and `getaddrinfo` are not.
final class EmbeddedProxy {
    let loop = EmbeddedEventLoop()
    let client: EmbeddedChannel
    let pipeline: AuditPipeline
    private let folder: String
    private let connections: NIOLockedValueBox<[EmbeddedChannel]>

    /// A proxy deciding by `rules`, where every host resolves to `addresses` (by name: a host not
    /// listed resolves to 127.0.0.1).
    init(rules: String, addresses: [String: String] = [:], connectPorts: Set<Int>? = [443]) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("embedded-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        var configuration = ProxyConfiguration()
        configuration.pipeline.logPath = folder + "/audit.jsonl"
        configuration.connectPorts = connectPorts
        pipeline = try AuditPipeline(
            policy: Policy(parsing: rules, file: "p.rules"), configuration: configuration.pipeline)
        let connections = NIOLockedValueBox<[EmbeddedChannel]>([])
        self.connections = connections
        var services = ProxyServices(pipeline: pipeline, configuration: configuration, report: { _ in })
        let loop = self.loop
        services.upstreams = UpstreamConnector(
            resolve: { host, port, eventLoop in
                eventLoop.makeCompletedFuture {
                    [try SocketAddress(ipAddress: addresses[host] ?? "127.0.0.1", port: port)]
                }
            },
            connect: { _, addresses, _, initializer in
                let channel = EmbeddedChannel(loop: loop)
                connections.withLockedValue { $0.append(channel) }
                return initializer(channel).flatMap { channel.connect(to: addresses[0]) }.map { channel }
            })
        client = EmbeddedChannel(loop: loop)
        try ProxyHandler.install(on: client, services: services)
        try client.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 50_000)).wait()
    }

    /// The server connections made so far, in order.
    var servers: [EmbeddedChannel] { connections.withLockedValue { $0 } }

    /// Sends `text` from the client, as bytes.
    func send(_ text: String) throws {
        try client.writeInbound(ByteBuffer(string: text))
        settle()
    }

    /// Runs what is due on the loop, and reads from the client as a socket channel does after each
    /// read (auto-read): a request held back behind another is handed on at a read, one request a
    /// read.
    private func settle() {
        for _ in 0..<8 {
            loop.run()
            client.read()
        }
        loop.run()
    }

    /// What the proxy has written to the client since the last call.
    func answer() throws -> String {
        settle()
        return try Self.drain(client)
    }

    /// What the proxy has sent to server connection `index` since the last call.
    func sent(toServer index: Int) throws -> String {
        settle()
        return try Self.drain(try #require(servers.count > index ? servers[index] : nil, "server \(index)"))
    }

    /// Answers on server connection `index` with `text`, as bytes.
    func reply(fromServer index: Int, _ text: String) throws {
        try servers[index].writeInbound(ByteBuffer(string: text))
        settle()
    }

    /// The client closes its connection.
    func closeClient() {
        client.close(promise: nil)
        loop.run()
    }

    /// Server connection `index` closes.
    func closeServer(_ index: Int) {
        servers[index].close(promise: nil)
        loop.run()
    }

    /// The records logged (the pipeline is shut down first).
    func records() async throws -> [AuditRecord] {
        try await pipeline.shutdown()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        return try AuditLogReader.read(atPath: folder + "/audit.jsonl").records
    }

    private static func drain(_ channel: EmbeddedChannel) throws -> String {
        var text = ""
        while let data = try channel.readOutbound(as: IOData.self) {
            guard case .byteBuffer(let buffer) = data else { continue }
            text += String(buffer: buffer)
        }
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { text += String(buffer: buffer) }
        return text
    }
}

extension String {
    /// The status line of an HTTP message (its first line).
    var statusLine: String { components(separatedBy: "\r\n").first ?? "" }
    /// The status lines of the HTTP responses in the text, in order.
    var statusLines: [String] {
        var lines: [String] = []
        var rest = self[...]
        while let start = rest.range(of: "HTTP/1.1 ") {
            let line = rest[start.lowerBound...].prefix { $0 != "\r\n" }
            if line.dropFirst(9).prefix(3).allSatisfy(\.isNumber) { lines.append(String(line)) }
            rest = rest[start.upperBound...]
        }
        return lines
    }
    /// The body of an HTTP message (after the blank line).
    var body: String { components(separatedBy: "\r\n\r\n").dropFirst().joined(separator: "\r\n\r\n") }
}
