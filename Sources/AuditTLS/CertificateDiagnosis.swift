import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import NIOTLS
import X509

/// Why a server's certificate did not verify, in words: expired (and when), not yet valid,
/// self-signed, or issued by an authority no trusted root vouches for.
///
/// BoringSSL reports every such failure as `CERTIFICATE_VERIFY_FAILED`. After one, the proxy makes a
/// second handshake with the same address that verifies nothing, only to read the certificate and
/// name the reason; it sends nothing over that connection and closes it. Failures only: a
/// verified connection never pays for it.
public enum CertificateDiagnosis {
    /// The reason the certificate of the server at `address` (`authority` in messages, `host` as
    /// SNI unless it is an IP address) does not verify, at `now`; the generic reason when the second
    /// handshake fails too.
    public static func reason(
        address: SocketAddress, host: String, authority: String, eventLoop: any EventLoop, now: Date = Date()
    ) -> EventLoopFuture<String> {
        let serverName = IPAddress.bytes(of: host) == nil ? host : nil
        let generic = TLSFailure.unverified(authority: authority)
        guard let context = unverifiedContext else { return eventLoop.makeSucceededFuture(generic) }
        let promise = eventLoop.makePromise(of: NIOSSLCertificate?.self)
        ClientBootstrap(group: eventLoop)
            .connectTimeout(.seconds(5))
            .channelInitializer { channel in
                channel.eventLoop.makeCompletedFuture {
                    let sync = channel.pipeline.syncOperations
                    try sync.addHandler(NIOSSLClientHandler(context: context, serverHostname: serverName))
                    try sync.addHandler(PeerCertificateReader(promise: promise))
                }
            }
            .connect(to: address)
            .whenComplete { result in
                switch result {
                case .success(let channel):
                    channel.eventLoop.scheduleTask(in: .seconds(5)) { channel.close(promise: nil) }
                case .failure(let error):
                    promise.fail(error)
                }
            }
        return promise.futureResult.map { certificate in
            guard let certificate, let bytes = try? certificate.toDERBytes(),
                let parsed = try? Certificate(derEncoded: bytes)
            else { return generic }
            return describe(parsed, authority: authority, now: now)
        }.recover { _ in generic }
    }

    /// The reason `certificate`, which did not verify, was refused.
    public static func describe(_ certificate: Certificate, authority: String, now: Date) -> String {
        let day = ISO8601DateFormatter()
        if certificate.notValidAfter < now {
            return "the certificate of \(authority) expired on \(day.string(from: certificate.notValidAfter))"
        }
        if certificate.notValidBefore > now {
            return "the certificate of \(authority) is not valid before \(day.string(from: certificate.notValidBefore))"
        }
        if certificate.issuer == certificate.subject {
            return "the certificate of \(authority) is self-signed ('\(certificate.subject)'), and no trusted root; "
                + "--upstream-ca FILE adds one"
        }
        return "the certificate of \(authority) is issued by '\(certificate.issuer)', which no trusted root vouches "
            + "for; --upstream-ca FILE adds one"
    }

    private static let unverifiedContext: NIOSSLContext? = {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .none
        configuration.applicationProtocols = ["http/1.1"]
        return try? NIOSSLContext(configuration: configuration)
    }()
}

/// Hands on the server's certificate once the handshake completes, then closes the connection.
private final class PeerCertificateReader: ChannelInboundHandler {
    typealias InboundIn = ByteBuffer

    private let promise: EventLoopPromise<NIOSSLCertificate?>

    init(promise: EventLoopPromise<NIOSSLCertificate?>) { self.promise = promise }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? TLSUserEvent, case .handshakeCompleted = event {
            let certificate = try? context.pipeline.syncOperations.handler(type: NIOSSLClientHandler.self)
                .peerCertificate
            promise.succeed(certificate ?? nil)
            context.close(promise: nil)
        }
        context.fireUserInboundEventTriggered(event)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        promise.fail(error)
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        promise.fail(ChannelError.ioOnClosedChannel)
        context.fireChannelInactive()
    }
}
