import NIOCore
import NIOEmbedded
import Testing

@testable import AuditProxy

/// The flushes of an event loop's round of ready connections: the first goes out at once, the
/// others when the round ends, and a close never drops what was written.
@Suite struct FlushCoalescingTests {
    /// `count` connections on one loop, each with its side of the loop's round.
    static func connections(_ count: Int) throws -> (EmbeddedEventLoop, [EmbeddedChannel]) {
        let loop = EmbeddedEventLoop()
        let round = NIOLoopBoundBox.makeBoxSendingValue(FlushRound(), eventLoop: loop)
        let channels = try (0..<count).map { _ in
            let channel = EmbeddedChannel(loop: loop)
            try channel.pipeline.syncOperations.addHandler(FlushCoalescing(round: round))
            return channel
        }
        return (loop, channels)
    }

    /// What went out on `channel` since the last look, as text.
    static func sent(_ channel: EmbeddedChannel) throws -> [String] {
        var sent: [String] = []
        while let buffer = try channel.readOutbound(as: ByteBuffer.self) { sent.append(String(buffer: buffer)) }
        return sent
    }

    @Test("the first flush of a round goes out at once; the others when the loop ends the round")
    func laterFlushesWaitForTheRoundsEnd() throws {
        let (loop, channels) = try Self.connections(3)
        for (index, channel) in channels.enumerated() {
            channel.writeAndFlush(ByteBuffer(string: "answer \(index)"), promise: nil)
        }
        #expect(try channels.map(Self.sent) == [["answer 0"], [], []])
        loop.run()
        #expect(try channels.map(Self.sent) == [[], ["answer 1"], ["answer 2"]])
    }

    @Test("after a round ends, the next round's first flush goes out at once again")
    func eachRoundStartsAtOnce() throws {
        let (loop, channels) = try Self.connections(2)
        channels[0].writeAndFlush(ByteBuffer(string: "first"), promise: nil)
        loop.run()
        channels[1].writeAndFlush(ByteBuffer(string: "second"), promise: nil)
        #expect(try channels.map(Self.sent) == [["first"], ["second"]])
    }

    @Test("a connection held in a round flushes once at its end, with everything it wrote")
    func heldConnectionFlushesOnce() throws {
        let (loop, channels) = try Self.connections(2)
        channels[0].writeAndFlush(ByteBuffer(string: "a"), promise: nil)
        channels[1].writeAndFlush(ByteBuffer(string: "head "), promise: nil)
        channels[1].writeAndFlush(ByteBuffer(string: "body"), promise: nil)
        #expect(try Self.sent(channels[1]).isEmpty)
        loop.run()
        #expect(try Self.sent(channels[1]) == ["head ", "body"])
    }

    @Test("a connection closed while its flush is held sends what it wrote before it closes")
    func closeSendsHeldWrites() throws {
        let (loop, channels) = try Self.connections(2)
        channels[0].writeAndFlush(ByteBuffer(string: "a"), promise: nil)
        let written = channels[1].writeAndFlush(ByteBuffer(string: "last answer"))
        channels[1].close(promise: nil)
        #expect(try Self.sent(channels[1]) == ["last answer"])
        loop.run()
        #expect(throws: Never.self) { try written.wait() }
    }
}
