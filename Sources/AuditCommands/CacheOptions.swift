import ArgumentParser
import AuditCache
import AuditPolicy
import Foundation

/// `--cache-dir` and `--cache-size`: where the responses of `cache` rules are kept.
struct CacheOptions: ParsableArguments {
    @Option(
        name: .customLong("cache-dir"),
        help: """
            Where cache rules keep responses (kept across runs). Default: a temporary folder removed at exit \
            (audit cache finds it while the proxy runs).
            """)
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

        /// E.g. `, cache /var/cache/audit (1 GB)` or `, cache /tmp/audit-cache-812-5f0c1d2e (temporary, 1 GB)`.
        var note: String {
            ", cache \(cache.directory) (\(isTemporary ? "temporary, " : "")"
                + "\(ByteCountFormatter.string(fromByteCount: Int64(cache.maximumBytes), countStyle: .binary)))"
        }
    }

    /// The name of a temporary cache folder, in the system's temporary folder, starts with this.
    static let temporaryFolderPrefix = "audit-cache-"

    /// The temporary cache folders, sorted.
    private static func temporaryFolders() -> [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: NSTemporaryDirectory())) ?? []
        return names.filter { $0.hasPrefix(temporaryFolderPrefix) }.sorted().map { NSTemporaryDirectory() + $0 }
    }

    /// The temporary cache folders that a running `audit proxy` or `audit run` has open.
    static func temporaryFoldersInUse() -> [String] {
        temporaryFolders().filter { HTTPCache.isInUse(directory: $0) }
    }

    /// Removes the temporary cache folders of proxies that were killed: those no process has
    /// open, made more than a minute ago (one made just now may not be open yet).
    private static func removeAbandonedTemporaryFolders() {
        let manager = FileManager.default
        for folder in temporaryFolders() where !HTTPCache.isInUse(directory: folder) {
            guard let made = try? manager.attributesOfItem(atPath: folder)[.modificationDate] as? Date,
                made.timeIntervalSinceNow < -60
            else { continue }
            try? manager.removeItem(atPath: folder)
        }
    }

    /// The cache, when the policy has cache rules or `--cache-dir` is given; a usage error when the
    /// folder cannot be used.
    func open(for policy: Policy, command: String) throws -> Opened? {
        let hasCacheRules = policy.rules.contains { $0.cacheSettings != nil }
        guard hasCacheRules || cacheDirectory != nil else { return nil }
        if cacheDirectory == nil { Self.removeAbandonedTemporaryFolders() }
        let folder =
            cacheDirectory ?? NSTemporaryDirectory() + Self.temporaryFolderPrefix
            + "\(getpid())-\(UUID().uuidString.prefix(8).lowercased())"
        do {
            let cache = try HTTPCache(directory: folder, maximumBytes: cacheSize, isShared: true)
            return Opened(cache: cache, isTemporary: cacheDirectory == nil)
        } catch {
            CommandOutput.errorLine("\(command): \(error.description)")
            throw ExitCode.validationFailure
        }
    }
}
