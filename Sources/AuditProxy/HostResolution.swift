import NIOCore
import NIOPosix

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The addresses a host name resolves to, found once, before connecting: the proxy checks each of
/// them against the policy and connects to exactly them (``FixedResolver``), so that no second
/// lookup can send the request somewhere the policy did not see.
///
/// The one place AuditProxy reads C memory: `getaddrinfo`'s list, copied into `SocketAddress`
/// values before it is freed.
enum HostResolution {
    /// The host could not be resolved.
    struct Failure: Error, CustomStringConvertible {
        let host: String
        let reason: String
        var description: String { "cannot resolve \(host): \(reason)" }
    }

    /// Every address `host` resolves to for a TCP connection to `port` (blocking: call it off the
    /// event loop); an IP address literal is itself.
    static func addresses(of host: String, port: Int) throws(Failure) -> [SocketAddress] {
        if let literal = try? SocketAddress(ipAddress: host, port: port) { return [literal] }
        var hints = unsafe addrinfo()
        unsafe hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        unsafe hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let status = unsafe getaddrinfo(host, String(port), &hints, &list)
        guard status == 0 else {
            throw Failure(host: host, reason: unsafe String(cString: gai_strerror(status)))
        }
        defer { unsafe freeaddrinfo(list) }
        var addresses: [SocketAddress] = []
        var entry = unsafe list
        while let current = unsafe entry {
            if let address = unsafe current.pointee.ai_addr {
                switch unsafe current.pointee.ai_family {
                case AF_INET:
                    let ipv4 = unsafe UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in.self)
                    addresses.append(SocketAddress(ipv4, host: host))
                case AF_INET6:
                    let ipv6 = unsafe UnsafeRawPointer(address).loadUnaligned(as: sockaddr_in6.self)
                    addresses.append(SocketAddress(ipv6, host: host))
                default:
                    break
                }
            }
            unsafe entry = current.pointee.ai_next
        }
        guard !addresses.isEmpty else { throw Failure(host: host, reason: "no address") }
        return addresses
    }
}

/// A resolver that answers with addresses found (and checked) beforehand, so that NIO's
/// connection racing (Happy Eyeballs) connects to exactly them.
struct FixedResolver: Resolver, Sendable {
    let addresses: [SocketAddress]
    let eventLoop: any EventLoop

    func initiateAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
        eventLoop.makeSucceededFuture(addresses.filter { $0.protocol == .inet })
    }

    func initiateAAAAQuery(host: String, port: Int) -> EventLoopFuture<[SocketAddress]> {
        eventLoop.makeSucceededFuture(addresses.filter { $0.protocol == .inet6 })
    }

    func cancelQueries() {}
}
