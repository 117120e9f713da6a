import AuditPipeline
import AuditPolicy
import Foundation
import NIOCore
import NIOHTTP1
import Testing

@testable import AuditProxy

/// The proxy's connection state machine alone: events in, actions out, no channel.
@Suite struct ProxyConnectionTests {
    static let pipeline: AuditPipeline = {
        // swift-format-ignore: NeverUseForceTry
        try! AuditPipeline(policy: Policy(parsing: "[block]\nnever ^x-never:", file: "p.rules"))
    }()

    /// An exchange for `head` (absolute-form, or a CONNECT authority), as the handler makes it.
    static func exchange(_ head: HTTPRequestHead) throws -> ProxyConnection.Exchange {
        let target = try #require(
            head.method == .CONNECT ? ProxyTarget(connectAuthority: head.uri) : ProxyTarget(absoluteURI: head.uri))
        let audited = pipeline.admit(AuditRequest(method: head.method.rawValue, url: head.uri), bodyBytes: nil)
        return ProxyConnection.Exchange(audited, target: target, destination: .asDecided, head: head)
    }

    static func head(_ method: HTTPMethod = .GET, _ uri: String = "http://a.test/", _ headers: HTTPHeaders = [:])
        -> HTTPRequestHead
    {
        HTTPRequestHead(version: .http1_1, method: method, uri: uri, headers: headers)
    }

    /// A connection whose POST awaits its replay, its parts kept when `keepsParts`.
    static func awaitingReplay(keepsParts: Bool) throws -> (ProxyConnection, ProxyConnection.Exchange) {
        var connection = ProxyConnection()
        let exchange = try exchange(head(.POST))
        connection.awaitReplay(exchange, keepsParts: keepsParts)
        return (connection, exchange)
    }

    @Test("reads are held back while connecting upstream, and made once the request goes on")
    func readsHeldWhileConnecting() throws {
        var connection = ProxyConnection()
        let exchange = try Self.exchange(Self.head())
        let start = connection.forward(exchange, onKeptUpstream: false)
        #expect(start == .connect)
        let readsWhileConnecting = connection.shouldRead(isUpstreamWritable: true)
        let resumesWhileConnecting = connection.resumeReading(isUpstreamWritable: true)
        let waiting = connection.upstreamConnected(for: exchange.decision.id)
        let resumesWhileServerFull = connection.resumeReading(isUpstreamWritable: false)
        let resumes = connection.resumeReading(isUpstreamWritable: true)
        let resumesTwice = connection.resumeReading(isUpstreamWritable: true)
        #expect(!readsWhileConnecting && !resumesWhileConnecting)
        #expect(waiting != nil)
        #expect(!resumesWhileServerFull)
        #expect(resumes && !resumesTwice)
    }

    @Test("request parts that come while connecting wait, and are handed back when the connection is made")
    func partsWaitForTheConnection() throws {
        var connection = ProxyConnection()
        let exchange = try Self.exchange(Self.head(.POST))
        _ = connection.forward(exchange, onKeptUpstream: false)
        guard case .none = connection.requestPart(.body(ByteBuffer(string: "abc"))) else {
            Issue.record("a body part while connecting is sent")
            return
        }
        _ = connection.requestPart(.end(nil))
        let waiting = connection.upstreamConnected(for: exchange.decision.id)
        #expect(waiting?.count == 2)
        #expect(connection.isForwarding)
    }

    @Test("a connection made for an exchange that no longer waits is not used")
    func staleConnection() throws {
        var connection = ProxyConnection()
        let exchange = try Self.exchange(Self.head())
        _ = connection.forward(exchange, onKeptUpstream: false)
        let cutShort = connection.clientClosed()
        let waiting = connection.upstreamConnected(for: exchange.decision.id)
        let cutShortAgain = connection.clientClosed()
        #expect(cutShort?.decision.id == exchange.decision.id)
        #expect(waiting == nil)
        #expect(cutShortAgain == nil)
    }

    @Test("the connection is idle for the next request before the last part of the response is written")
    func idleBeforeTheEndIsWritten() throws {
        var connection = ProxyConnection()
        _ = connection.forward(try Self.exchange(Self.head()), onKeptUpstream: true)
        _ = connection.requestPart(.end(nil))
        _ = connection.responsePart(.head(HTTPResponseHead(version: .http1_1, status: .ok)))
        guard case .end(let exchange, _, let closesUpstream, let next) = connection.responsePart(.end(nil)) else {
            Issue.record("the response's end is not the exchange's")
            return
        }
        #expect(next == .awaitNextHead)
        #expect(!closesUpstream)
        #expect(exchange.status == 200)
        #expect(connection.isAwaitingHead)
    }

    @Test(
        "a response that ends before its request keeps the exchange until the request's end, whose rest is dropped, and closes the server connection"
    )
    func responseBeforeRequestEnd() throws {
        var connection = ProxyConnection()
        _ = connection.forward(try Self.exchange(Self.head(.POST)), onKeptUpstream: true)
        _ = connection.responsePart(.head(HTTPResponseHead(version: .http1_1, status: .payloadTooLarge)))
        guard case .end(_, _, true, nil) = connection.responsePart(.end(nil)) else {
            Issue.record("the exchange ended before its request")
            return
        }
        guard case .none = connection.requestPart(.body(ByteBuffer(string: "late"))) else {
            Issue.record("a body part after the response is sent")
            return
        }
        guard case .exchangeEnded(.awaitNextHead) = connection.requestPart(.end(nil)) else {
            Issue.record("the request's end does not end the exchange")
            return
        }
        #expect(connection.isAwaitingHead)
    }

    @Test(
        "the rest of a request the server answered already is read, whether or not the server connection can take more")
    func readsAfterEarlyResponse() throws {
        var connection = ProxyConnection()
        _ = connection.forward(try Self.exchange(Self.head(.POST)), onKeptUpstream: true)
        _ = connection.requestPart(.body(ByteBuffer(string: "first")))
        let readsWhileServerFull = connection.shouldRead(isUpstreamWritable: false)
        _ = connection.responsePart(.head(HTTPResponseHead(version: .http1_1, status: .payloadTooLarge)))
        _ = connection.responsePart(.end(nil))
        let resumesWithoutServer = connection.resumeReading(isUpstreamWritable: false)
        let readsWithoutServer = connection.shouldRead(isUpstreamWritable: false)
        #expect(!readsWhileServerFull)
        #expect(resumesWithoutServer && readsWithoutServer)
    }

    @Test("a server that closes after its response is not kept; the client's connection is")
    func serverCloses() throws {
        var connection = ProxyConnection()
        _ = connection.forward(try Self.exchange(Self.head()), onKeptUpstream: true)
        _ = connection.requestPart(.end(nil))
        _ = connection.responsePart(
            .head(HTTPResponseHead(version: .http1_1, status: .ok, headers: ["Connection": "close"])))
        guard case .end(_, _, true, .awaitNextHead) = connection.responsePart(.end(nil)) else {
            Issue.record("the server's connection is kept")
            return
        }
    }

    @Test("after an upgrade the server refuses, the next request is read by a new decoder")
    func refusedUpgradeReadsOn() throws {
        var connection = ProxyConnection()
        let head = Self.head(.GET, "http://a.test/ws", ["Connection": "Upgrade", "Upgrade": "websocket"])
        _ = connection.forward(try Self.exchange(head), onKeptUpstream: true)
        _ = connection.requestPart(.end(nil))
        _ = connection.responsePart(.head(HTTPResponseHead(version: .http1_1, status: .forbidden)))
        guard case .end(_, _, _, .awaitNextHeadOnNewDecoder) = connection.responsePart(.end(nil)) else {
            Issue.record("the connection waits for a request its decoder will not read")
            return
        }
        #expect(connection.isAwaitingHead)
    }

    @Test("an Upgrade header without the upgrade token in Connection does not stop the decoder")
    func upgradeHeaderAlone() throws {
        var connection = ProxyConnection()
        _ = connection.forward(
            try Self.exchange(Self.head(.GET, "http://a.test/", ["Upgrade": "websocket"])), onKeptUpstream: true)
        _ = connection.requestPart(.end(nil))
        _ = connection.responsePart(.head(HTTPResponseHead(version: .http1_1, status: .ok)))
        guard case .end(_, _, _, .awaitNextHead) = connection.responsePart(.end(nil)) else {
            Issue.record("the decoder is replaced after a request it read on from")
            return
        }
    }

    @Test("a 101 to an upgrade request splices at the response's end; to h2c it is not an upgrade")
    func upgradeSplices() throws {
        for (upgrade, splices) in [("websocket", true), ("h2c", false)] {
            var connection = ProxyConnection()
            let head = Self.head(.GET, "http://a.test/", ["Connection": "Upgrade", "Upgrade": upgrade])
            _ = connection.forward(try Self.exchange(head), onKeptUpstream: true)
            _ = connection.requestPart(.end(nil))
            let switching = connection.responsePart(
                .head(HTTPResponseHead(version: .http1_1, status: .switchingProtocols)))
            let end = connection.responsePart(.end(nil))
            if splices {
                guard case .writeUpgrade = switching, case .splice = end else {
                    Issue.record("a WebSocket upgrade is not spliced")
                    continue
                }
            } else {
                guard case .writeInterim = switching else {
                    Issue.record("an h2c 101 is passed on as the response")
                    continue
                }
                if case .splice = end { Issue.record("an h2c 101 is spliced") }
            }
        }
    }

    @Test("a CONNECT is spliced once its server connection is made and its end has come, in either order")
    func tunnelWaitsForBoth() throws {
        var first = ProxyConnection()
        first.openTunnel(try Self.exchange(Self.head(.CONNECT, "a.test:443")))
        guard case .awaitRequestEnd = first.tunnelConnected(), case .spliceTunnel = first.requestPart(.end(nil)) else {
            Issue.record("connected first: not spliced at the CONNECT's end")
            return
        }
        var second = ProxyConnection()
        second.openTunnel(try Self.exchange(Self.head(.CONNECT, "a.test:443")))
        guard case .none = second.requestPart(.end(nil)), case .splice = second.tunnelConnected() else {
            Issue.record("ended first: not spliced once connected")
            return
        }
    }

    @Test("a client that leaves while its tunnel opens gets its CONNECT recorded, and the connection made closed")
    func clientLeavesOpeningTunnel() throws {
        var connection = ProxyConnection()
        connection.openTunnel(try Self.exchange(Self.head(.CONNECT, "a.test:443")))
        let cutShort = connection.clientClosed()
        #expect(cutShort != nil)
        guard case .close = connection.tunnelConnected() else {
            Issue.record("a tunnel is spliced to a closed client")
            return
        }
        let failed = connection.tunnelFailed()
        #expect(failed == nil)
    }

    @Test("an answer of the proxy's own drains the request, then waits for the next or closes")
    func answeredRequestDrains() {
        for closesAfter in [false, true] {
            var connection = ProxyConnection()
            let next = connection.answer(closesAfter: closesAfter)
            #expect(next == nil)
            guard case .none = connection.requestPart(.body(ByteBuffer(string: "dropped"))),
                case .answered(let after) = connection.requestPart(.end(nil))
            else {
                Issue.record("the answered request's parts are not drained")
                continue
            }
            #expect(after == (closesAfter ? .close : .awaitNextHead))
            #expect(connection.isAwaitingHead == !closesAfter)
        }
    }

    @Test("a refused CONNECT closes the connection after the answer")
    func refusedConnectCloses() {
        var connection = ProxyConnection()
        let next = connection.answer(closesAfter: true, isConnect: true)
        #expect(next == .close)
        #expect(!connection.isAwaitingHead)
    }

    @Test("a request awaiting its replay is read on, its body handed over piece by piece, then its end")
    func replayReadsTheRequest() throws {
        var (connection, exchange) = try Self.awaitingReplay(keepsParts: false)
        let reads = connection.shouldRead(isUpstreamWritable: false)
        guard case .replayBody(let piece) = connection.requestPart(.body(ByteBuffer(string: "abc"))),
            case .replayRequestEnded(let id) = connection.requestPart(.end(nil))
        else {
            Issue.record("the request's body and end are not handed over")
            return
        }
        #expect(reads)
        #expect(piece == ByteBuffer(string: "abc"))
        #expect(id == exchange.decision.id)
    }

    @Test("a replay's miss goes to the server with the parts kept, and waits as if connecting")
    func replayMissSendsKeptParts() throws {
        var (connection, exchange) = try Self.awaitingReplay(keepsParts: true)
        _ = connection.requestPart(.body(ByteBuffer(string: "abc")))
        let missed = connection.replayMissed(for: exchange.decision.id)
        // The rest of the body waits for the connection, as for any request sent on.
        guard case .none = connection.requestPart(.body(ByteBuffer(string: "def"))) else {
            Issue.record("a body part after the miss is handed over for the replay")
            return
        }
        let readsWhileConnecting = connection.shouldRead(isUpstreamWritable: true)
        let waiting = connection.upstreamConnected(for: exchange.decision.id)
        #expect(missed && !readsWhileConnecting)
        #expect(waiting?.count == 2)
        #expect(connection.isForwarding)
    }

    @Test("a replay whose parts were not kept cannot go to the server; its answer drains the rest of the request")
    func replayMissWithoutKeptParts() throws {
        var (connection, exchange) = try Self.awaitingReplay(keepsParts: false)
        _ = connection.requestPart(.body(ByteBuffer(string: "abc")))
        let missed = connection.replayMissed(for: exchange.decision.id)
        let answered = connection.answerWithoutUpstream(for: exchange.decision.id)
        guard case .answered(.awaitNextHead) = connection.requestPart(.end(nil)) else {
            Issue.record("the rest of the request is not drained after the answer")
            return
        }
        #expect(!missed)
        #expect(answered?.0.decision.id == exchange.decision.id && answered?.1 == nil)
    }

    @Test("a client that leaves while its request awaits the replay gets it recorded as cut short")
    func replayClientLeaves() throws {
        var (connection, exchange) = try Self.awaitingReplay(keepsParts: true)
        let cutShort = connection.clientClosed()
        let missed = connection.replayMissed(for: exchange.decision.id)
        #expect(cutShort?.decision.id == exchange.decision.id)
        #expect(!missed)
    }
}
