import NIOCore

/// One side of a spliced connection pair (a CONNECT tunnel, or an upgraded connection): bytes read
/// on this side are written to the partner, and this side reads only while the partner can take
/// more, so a fast sender never fills memory.
///
/// Both sides live on the same event loop (the upstream connection is made on the client's loop),
/// so partners call each other directly.
final class TunnelHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias OutboundIn = ByteBuffer
    typealias OutboundOut = ByteBuffer

    /// The bytes both sides carried and when the pair closed; shared by the two sides.
    final class Account {
        /// Bytes read from the client side (sent on to the server).
        var fromClient = 0
        /// Bytes read from the server side (sent on to the client).
        var fromServer = 0
        /// Why the pair was cut off, when it was (a client that sent no TLS into a tunnel to 443).
        var failure: String?
        private var onClose: ((Account) -> Void)?

        init(onClose: @escaping (Account) -> Void) { self.onClose = onClose }

        /// Called by each side as it closes; the first call reports.
        func closed() {
            let report = onClose
            onClose = nil
            report?(self)
        }
    }

    private let isClientSide: Bool
    private let account: Account
    private var partner: TunnelHandler?
    private var context: ChannelHandlerContext?
    private var pendingRead = false

    private init(isClientSide: Bool, account: Account) {
        self.isClientSide = isClientSide
        self.account = account
    }

    /// A client side and a server side, partnered, counting into `account`.
    static func pair(account: Account) -> (client: TunnelHandler, server: TunnelHandler) {
        let client = TunnelHandler(isClientSide: true, account: account)
        let server = TunnelHandler(isClientSide: false, account: account)
        client.partner = server
        server.partner = client
        return (client, server)
    }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        // A side added after its channel closed (the server hung up at once) closes the pair.
        if !context.channel.isActive { closePair() }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        self.context = nil
        partner = nil
    }

    // MARK: This side's events

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        let buffer = unwrapInboundIn(data)
        if isClientSide {
            account.fromClient += buffer.readableBytes
        } else {
            account.fromServer += buffer.readableBytes
        }
        partner?.write(buffer)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        partner?.flush()
    }

    func channelInactive(context: ChannelHandlerContext) {
        closePair()
        context.fireChannelInactive()
    }

    func errorCaught(context: ChannelHandlerContext, error: Error) {
        if let notTLS = error as? TLSRecordCheck.NotTLS { account.failure = notTLS.description }
        closePair()
    }

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        if context.channel.isWritable { partner?.partnerBecameWritable() }
        context.fireChannelWritabilityChanged()
    }

    func read(context: ChannelHandlerContext) {
        if partner?.isWritable ?? false {
            context.read()
        } else {
            pendingRead = true
        }
    }

    // MARK: What the partner asks

    private var isWritable: Bool { context?.channel.isWritable ?? false }

    private func write(_ buffer: ByteBuffer) {
        context?.write(wrapOutboundOut(buffer), promise: nil)
    }

    private func flush() {
        context?.flush()
    }

    private func partnerBecameWritable() {
        guard pendingRead, let context else { return }
        pendingRead = false
        context.read()
    }

    /// Closes both sides and reports the pair's account once.
    private func closePair() {
        let partner = self.partner
        self.partner = nil
        partner?.partner = nil
        context?.close(promise: nil)
        partner?.context?.close(promise: nil)
        account.closed()
    }
}
