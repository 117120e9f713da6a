import AuditLocking
import Crypto
import Foundation
import NIOSSL
import SwiftASN1
import X509

/// The server side of intercepted tunnels: a TLS context per host, showing a certificate the
/// ``CertificateAuthority`` issued for that host.
///
/// Certificates are minted on a host's first tunnel and kept in a bounded cache, least recently
/// used first out, and minted again a day before they expire. Every leaf shares one key made with
/// the cache (as mitmproxy's do): a new host costs one signature, not a key generation. Minting
/// happens under the cache's lock, so concurrent first tunnels to one host mint once.
public final class LeafCertificates: Sendable {
    /// The CA that signs the leaves.
    public let authority: CertificateAuthority
    /// Most hosts kept.
    public let capacity: Int
    /// How long a leaf is valid.
    public let validity: TimeInterval

    private let key: P256.Signing.PrivateKey
    private let keyForTLS: NIOSSLPrivateKey
    private let authorityCertificate: NIOSSLCertificate
    private let cache = Locked(Cache())

    private struct Entry {
        let context: NIOSSLContext
        let renewAfter: Date
        var lastUse: UInt64
    }

    private struct Cache {
        var entries: [String: Entry] = [:]
        var uses: UInt64 = 0
        var minted = 0
    }

    /// A cache of at most `capacity` hosts' leaves issued by `authority`, each valid for
    /// `validity` (30 days by default).
    public init(
        authority: CertificateAuthority, capacity: Int = 1_024, validity: TimeInterval = 30 * 86_400
    ) throws(TLSSetupError) {
        self.authority = authority
        self.capacity = max(1, capacity)
        self.validity = validity
        key = P256.Signing.PrivateKey()
        do {
            keyForTLS = try NIOSSLPrivateKey(bytes: Array(key.pemRepresentation.utf8), format: .pem)
            authorityCertificate = try NIOSSLCertificate(bytes: authority.certificate.derBytes, format: .der)
        } catch {
            throw .minting("the leaves' key: \(error)")
        }
    }

    /// Leaves minted so far (a host minted again after eviction or renewal counts again).
    public var mintedCount: Int { cache.withLock { $0.minted } }

    /// Hosts whose context is kept now.
    public var count: Int { cache.withLock { $0.entries.count } }

    /// The server TLS context for `host` (canonical: lower-case DNS name, or an IP address without
    /// brackets), minting its leaf if it has none or its leaf is about to expire. ALPN offers
    /// `http/1.1` only.
    public func context(for host: String, now: Date = Date()) throws(TLSSetupError) -> NIOSSLContext {
        try cache.withLock { cache throws(TLSSetupError) -> NIOSSLContext in
            cache.uses += 1
            if var entry = cache.entries[host], entry.renewAfter > now {
                entry.lastUse = cache.uses
                cache.entries[host] = entry
                return entry.context
            }
            let context = try makeContext(for: host, now: now)
            cache.minted += 1
            cache.entries[host] = Entry(context: context, renewAfter: now + validity - 86_400, lastUse: cache.uses)
            if cache.entries.count > capacity { Self.evict(&cache, keeping: capacity) }
            return context
        }
    }

    /// Drops the least recently used eighth of the cache (at least one entry), so that eviction's
    /// sort runs once per many new hosts, not on each.
    private static func evict(_ cache: inout Cache, keeping capacity: Int) {
        let surplus = cache.entries.count - capacity + max(1, capacity / 8)
        let oldest = cache.entries.sorted { $0.value.lastUse < $1.value.lastUse }.prefix(surplus)
        for (host, _) in oldest { cache.entries.removeValue(forKey: host) }
    }

    /// A leaf for `host` as this cache mints them (with its key and validity), not kept.
    public func certificate(for host: String, now: Date = Date()) throws(TLSSetupError) -> Certificate {
        try authority.issueLeaf(for: host, publicKey: key.publicKey, now: now, validity: validity)
    }

    private func makeContext(for host: String, now: Date) throws(TLSSetupError) -> NIOSSLContext {
        let leaf = try certificate(for: host, now: now)
        do {
            let certificate = try NIOSSLCertificate(bytes: leaf.derBytes, format: .der)
            // The CA goes with the leaf: clients that pin it by its key (Chromium's
            // --ignore-certificate-errors-spki-list) look for it in the chain the server presents.
            var configuration = TLSConfiguration.makeServerConfiguration(
                certificateChain: [.certificate(certificate), .certificate(authorityCertificate)],
                privateKey: .privateKey(keyForTLS))
            configuration.applicationProtocols = ["http/1.1"]
            configuration.minimumTLSVersion = .tlsv12
            return try NIOSSLContext(configuration: configuration)
        } catch {
            throw .minting("the TLS context for \(host): \(error)")
        }
    }
}
