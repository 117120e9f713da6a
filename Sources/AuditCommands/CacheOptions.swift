import ArgumentParser
import AuditCache
import AuditPolicy
import Foundation

/// `--cache-dir` and `--cache-size`: where the responses of `cache` rules are kept.
struct CacheOptions: ParsableArguments {
    @Option(
        name: .customLong("cache-dir"),
        help: "Where cache rules keep responses (kept across runs). Default: a temporary folder removed at exit.")
    var cacheDirectory: String?

    @Option(
        name: .customLong("cache-size"),
        help: "The most the cache may hold on disk, in bytes or with a unit: 512M, 2G (default 1G).",
        transform: { try byteCount($0, option: "--cache-size") })
    var cacheSize: Int = 1 << 30

    /// An opened cache and whether its folder is removed at exit.
    struct Opened {
        let cache: HTTPCache
        let isTemporary: Bool

        /// Removes a temporary cache folder.
        func removeTemporary() {
            if isTemporary { try? FileManager.default.removeItem(atPath: cache.directory) }
        }

        /// E.g. `, cache /var/cache/audit (1 GiB)`.
        var note: String {
            ", cache " + (isTemporary ? "in a temporary folder" : cache.directory)
                + " (\(ByteCountFormatter.string(fromByteCount: Int64(cache.maximumBytes), countStyle: .binary)))"
        }
    }

    /// The cache, when the policy has cache rules or `--cache-dir` is given; a usage error when the
    /// folder cannot be used.
    func open(for policy: Policy, command: String) throws -> Opened? {
        let hasCacheRules = policy.rules.contains { $0.cacheSettings != nil }
        guard hasCacheRules || cacheDirectory != nil else { return nil }
        let folder = cacheDirectory ?? NSTemporaryDirectory() + "audit-cache-\(getpid())-\(UUID().uuidString.prefix(8))"
        do {
            let cache = try HTTPCache(directory: folder, maximumBytes: cacheSize, isShared: true)
            return Opened(cache: cache, isTemporary: cacheDirectory == nil)
        } catch {
            CommandOutput.errorLine("\(command): \(error.description)")
            throw ExitCode.validationFailure
        }
    }
}
