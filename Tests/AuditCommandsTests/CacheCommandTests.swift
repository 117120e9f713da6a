import AuditReport
import Foundation
import Testing

@testable import AuditCommands

#if canImport(Glibc)
    import Glibc
#endif

/// `audit proxy --cache-dir` as a process, and `audit cache ls|stats|purge` on what it kept.
@Suite(.serialized) struct CacheCommandTests {
    /// A folder with `policies/p.rules` caching nginx's files for an hour.
    static func cachingFolder() throws -> TemporaryFolder {
        let folder = try TemporaryFolder([:])
        try FileManager.default.createDirectory(
            at: folder.url.appendingPathComponent("policies"), withIntermediateDirectories: true)
        try Data("[cache] ttl=1h\nfiles ^http://127\\.0\\.0\\.1:[0-9]+/\n".utf8)
            .write(to: folder.url.appendingPathComponent("policies/p.rules"))
        return folder
    }

    static func files(in path: String) -> [String] {
        (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
    }

    @Test(
        "a proxy killed (SIGKILL) while storing leaves no entry that is served; the next stores 300 MB whole and serves it, in bounded memory"
    )
    func killedMidStore() async throws {
        let folder = try Self.cachingFolder()
        let cacheDirectory = folder.path + "/cache"
        let arguments = ["--cache-dir", cacheDirectory, "--cache-size", "4G"]
        let url = try nginx() + "/big.bin"
        let first = try ProxyProcess(arguments: arguments, in: folder)
        // A slow client: the body is still being stored when the proxy is killed.
        let slow = Process()
        slow.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        slow.arguments = ["curl", "-sS", "-o", "/dev/null", "--limit-rate", "1M", "-x", first.address, url]
        slow.standardError = FileHandle.nullDevice
        try slow.run()
        try await Task.sleep(for: .milliseconds(1_500))
        #expect(Self.files(in: cacheDirectory + "/tmp").count == 1)
        first.signal(SIGKILL)
        first.process.waitUntilExit()
        slow.waitUntilExit()
        #expect(Self.files(in: cacheDirectory + "/entries").isEmpty)
        let listed = try runBinary(["cache", "ls", "--cache-dir", cacheDirectory])
        #expect(listed.exitCode == 0)
        #expect(listed.standardOutput.isEmpty)
        #expect(Self.files(in: cacheDirectory + "/tmp").isEmpty)

        let second = try ProxyProcess(arguments: arguments, in: folder)
        let stored = try curl(["-o", "/dev/null", "-w", "%{http_code} %{size_download}", url], through: second)
        let served = try curl(["-o", "/dev/null", "-w", "%{http_code} %{size_download}", url], through: second)
        let peak = second.peakResidentBytes
        #expect(second.stop() == 0)
        #expect(stored == "200 300000000")
        #expect(served == "200 300000000")
        #expect(peak < 100_000_000, "peak RSS \(peak / 1_048_576) MB")
        let records = try AuditLogReader.read(atPath: folder.path + "/audit.jsonl").records
        #expect(records.suffix(2).map(\.outcome.kind) == [.stored, .cached])
    }

    @Test("a stored 300 MB body that a 304 revalidates is served whole, in bounded memory")
    func largeRevalidation() async throws {
        let folder = try Self.cachingFolder()
        let proxy = try ProxyProcess(
            arguments: ["--cache-dir", folder.path + "/cache", "--cache-size", "4G"], in: folder)
        let url = try nginx() + "/no-cache/big.bin"
        let stored = try curl(["-o", "/dev/null", "-w", "%{http_code} %{size_download}", url], through: proxy)
        let revalidated = try curl(["-o", "/dev/null", "-w", "%{http_code} %{size_download}", url], through: proxy)
        let peak = proxy.peakResidentBytes
        #expect(proxy.stop() == 0)
        #expect(stored == "200 300000000")
        #expect(revalidated == "200 300000000")
        #expect(peak < 100_000_000, "peak RSS \(peak / 1_048_576) MB")
        let records = try AuditLogReader.read(atPath: folder.path + "/audit.jsonl").records
        #expect(records.map(\.outcome.kind) == [.stored, .revalidated])
    }

    @Test(
        "audit report prints what the cache saved per rule and per host: requests, hits, hit ratio, stored, bytes saved"
    )
    func reportCacheTotals() throws {
        let folder = try Self.cachingFolder()
        let url = try nginx() + "/small.txt"
        let proxy = try ProxyProcess(arguments: ["--cache-dir", folder.path + "/cache"], in: folder)
        for _ in 0..<4 { _ = try curl(["-o", "/dev/null", url], through: proxy) }
        #expect(proxy.stop() == 0)
        let report = try runBinary(["report", folder.path + "/audit.jsonl", "--out", folder.path + "/reports"])
        #expect(report.exitCode == 0)
        #expect(
            Array(report.outputLines.suffix(4)) == [
                "cache rule             requests    hits  hit ratio  stored  bytes saved",
                "p/files                       4       3     75.0 %       1         3072",
                "cache host             requests    hits  hit ratio  stored  bytes saved",
                "127.0.0.1                     4       3     75.0 %       1         3072",
            ])
    }

    @Test("audit cache ls lists entries, stats counts them per host, purge removes those a pattern matches")
    func listStatsPurge() async throws {
        let folder = try Self.cachingFolder()
        let cacheDirectory = folder.path + "/cache"
        let proxy = try ProxyProcess(arguments: ["--cache-dir", cacheDirectory], in: folder)
        for name in ["small.txt", "page.html"] { _ = try curl([try nginx() + "/" + name], through: proxy) }
        #expect(proxy.stop() == 0)
        #expect(proxy.standardError.isEmpty || !proxy.standardError.contains("error"))

        let listed = try runBinary(["cache", "ls", "--cache-dir", cacheDirectory])
        #expect(listed.exitCode == 0)
        #expect(listed.outputLines.count == 3)
        #expect(listed.outputLines.first?.split(separator: " ") == ["STATUS", "BYTES", "AGE", "RULE", "URL"])
        #expect(listed.outputLines.dropFirst().allSatisfy { $0.hasPrefix("200 ") && $0.contains("p/files") })
        #expect(listed.outputLines.contains { $0.hasSuffix(try! nginx() + "/small.txt") && $0.contains(" 1024 ") })

        let stats = try runBinary(["cache", "stats", "--cache-dir", cacheDirectory])
        #expect(stats.outputLines.first?.hasPrefix("2 entries, 1243 body bytes") == true)
        #expect(stats.outputLines.last?.contains("127.0.0.1") == true)

        let purged = try runBinary(["cache", "purge", "--cache-dir", cacheDirectory, "small\\.txt$"])
        #expect(purged.standardOutput == "removed 1 entry\n")
        let after = try runBinary(["cache", "ls", "--cache-dir", cacheDirectory])
        #expect(after.outputLines.count == 2)
        #expect(after.outputLines.last?.hasSuffix("/page.html") == true)
    }

    @Test("audit cache purge while the proxy runs: the purged response is fetched from the server again")
    func purgeWhileRunning() throws {
        let folder = try Self.cachingFolder()
        let cacheDirectory = folder.path + "/cache"
        let proxy = try ProxyProcess(arguments: ["--cache-dir", cacheDirectory], in: folder)
        let url = try nginx() + "/small.txt"
        for _ in 0..<2 { _ = try curl(["-o", "/dev/null", url], through: proxy) }
        let purged = try runBinary(["cache", "purge", "--cache-dir", cacheDirectory])
        _ = try curl(["-o", "/dev/null", url], through: proxy)
        #expect(proxy.stop() == 0)
        #expect(purged.standardOutput == "removed 1 entry\n")
        let records = try AuditLogReader.read(atPath: folder.path + "/audit.jsonl").records
        #expect(records.map(\.outcome.kind) == [.stored, .cached, .stored])
    }

    @Test(
        "without --cache-dir, audit cache ls and purge work on the temporary cache of the running proxy, and say when there is none"
    )
    func temporaryCacheOfRunningProxy() throws {
        let folder = try Self.cachingFolder()
        let temporary = folder.path + "/tmp"
        try FileManager.default.createDirectory(atPath: temporary, withIntermediateDirectories: true)
        let environment = ["TMPDIR": temporary]
        let proxy = try ProxyProcess(arguments: [], in: folder, environment: environment)
        let url = try nginx() + "/small.txt"
        for _ in 0..<2 { _ = try curl(["-o", "/dev/null", url], through: proxy) }
        let cacheDirectory = try #require(Self.files(in: temporary).first { $0.hasPrefix("audit-cache-") })
        let listed = try runBinary(["cache", "ls"], environment: environment)
        let stats = try runBinary(["cache", "stats"], environment: environment)
        let purged = try runBinary(["cache", "purge"], environment: environment)
        _ = try curl(["-o", "/dev/null", url], through: proxy)
        #expect(proxy.stop() == 0)
        #expect(proxy.firstLine.contains(", cache \(temporary)/\(cacheDirectory) (temporary, 1 GB)"))
        #expect(listed.exitCode == 0)
        #expect(listed.outputLines.count == 2)
        #expect(listed.outputLines.last?.hasSuffix(url) == true)
        #expect(stats.outputLines.first?.hasPrefix("1 entry, 1024 body bytes (folder: 1 entry, ") == true)
        #expect(purged.standardOutput == "removed 1 entry\n")
        let records = try AuditLogReader.read(atPath: folder.path + "/audit.jsonl").records
        #expect(records.map(\.outcome.kind) == [.stored, .cached, .stored])
        #expect(Self.files(in: temporary).isEmpty)

        let none = try runBinary(["cache", "ls"], environment: environment)
        #expect(none.exitCode == 64)
        #expect(
            none.standardError.contains(
                "no --cache-dir, and no running audit proxy or audit run keeps a temporary cache in \(temporary)/: "
                    + "give --cache-dir DIR"))
    }

    @Test("a proxy without --cache-dir removes the temporary caches of killed proxies, not a running one's")
    func abandonedTemporaryCaches() throws {
        let folder = try Self.cachingFolder()
        let temporary = folder.path + "/tmp"
        let environment = ["TMPDIR": temporary]
        let manager = FileManager.default
        for name in ["audit-cache-1-old", "audit-cache-2-new"] {
            try manager.createDirectory(atPath: temporary + "/" + name + "/entries", withIntermediateDirectories: true)
        }
        try manager.setAttributes(
            [.modificationDate: Date(timeIntervalSinceNow: -120)], ofItemAtPath: temporary + "/audit-cache-1-old")
        let running = try ProxyProcess(arguments: [], in: folder, environment: environment)
        let runningCache = try #require(
            Self.files(in: temporary).first { !["audit-cache-1-old", "audit-cache-2-new"].contains($0) })
        try manager.setAttributes(
            [.modificationDate: Date(timeIntervalSinceNow: -120)], ofItemAtPath: temporary + "/" + runningCache)
        let second = try ProxyProcess(arguments: [], in: folder, environment: environment)
        let left = Set(Self.files(in: temporary))
        #expect(second.stop() == 0)
        #expect(running.stop() == 0)
        #expect(!left.contains("audit-cache-1-old"))
        #expect(left.contains("audit-cache-2-new"))
        #expect(left.contains(runningCache))
        #expect(left.count == 3)
    }

    @Test(
        "--cache-size reads a unit in either case, after a space, as K, KB or KiB, and a number with a fraction",
        arguments: [
            ("0.5 KiB", 512), ("1.5k", 1_536), ("1000 B", 1_000), ("0.25M", 262_144), ("2 GiB", 2 << 30),
            ("1073741824", 1 << 30),
        ])
    func cacheSizeSpellings(_ size: String, _ bytes: Int) throws {
        #expect(try byteCount(size, option: "--cache-size") == bytes)
    }

    @Test("a proxy with a cache bound of 16 KiB keeps what fits and evicts the least recently used response")
    func smallCacheBound() throws {
        let folder = try Self.cachingFolder()
        let cacheDirectory = folder.path + "/cache"
        let proxy = try ProxyProcess(arguments: ["--cache-dir", cacheDirectory, "--cache-size", "16K"], in: folder)
        let httpbin = try #require(ProcessInfo.processInfo.environment["HTTPBIN_URL"])
        func fetch(_ number: Int) throws -> String {
            try curl(
                ["-o", "/dev/null", "-w", "%{http_code} %{size_download}", httpbin + "/range/3000?n=\(number)"],
                through: proxy)
        }
        for number in 0..<4 { #expect(try fetch(number) == "200 3000") }
        #expect(try fetch(0) == "200 3000")
        for number in 4..<6 { #expect(try fetch(number) == "200 3000") }
        let stats = try runBinary(["cache", "stats", "--cache-dir", cacheDirectory])
        let listed = try runBinary(["cache", "ls", "--cache-dir", cacheDirectory])
        #expect(try fetch(0) == "200 3000")
        #expect(try fetch(1) == "200 3000")
        #expect(proxy.stop() == 0)
        #expect(proxy.firstLine.contains(", cache \(cacheDirectory) (16 KB)"), "\(proxy.firstLine)")
        let onDisk = try #require(
            stats.outputLines.first?.components(separatedBy: " entries, ").last?.split(separator: " ").first)
        #expect(try #require(Int(onDisk)) <= 16_384, "\(stats.standardOutput)")
        #expect(!listed.standardOutput.contains("/range/3000?n=1\n"), "\(listed.standardOutput)")
        #expect(listed.standardOutput.contains("/range/3000?n=0\n"), "\(listed.standardOutput)")
        let records = try AuditLogReader.read(atPath: folder.path + "/audit.jsonl").records
        #expect(
            records.map(\.outcome.kind) == Array(repeating: .stored, count: 4) + [
                .cached, .stored, .stored, .cached, .stored,
            ])
    }

    @Test("audit cache names a folder that is not a cache, and a bad --cache-size, as usage errors")
    func usageErrors() throws {
        let folder = try TemporaryFolder([:])
        let listed = try runBinary(["cache", "ls", "--cache-dir", folder.path])
        #expect(listed.exitCode == 64)
        #expect(listed.standardError.contains("'\(folder.path)' is not a cache folder (it has no entries/)"))
        let proxy = try runBinary(["proxy", "--cache-size", "lots"])
        #expect(proxy.exitCode == 64)
        #expect(
            proxy.standardError.contains(
                "--cache-size: expected a size such as 1073741824, 512M, 1.5G or 2 GiB, got 'lots'"))
        let missing = folder.path + "/missing.har"
        let replay = try runBinary(["proxy", "--listen", "127.0.0.1:0", "--replay", missing])
        #expect(replay.exitCode == 64)
        #expect(
            replay.standardError.contains(
                "audit proxy: --replay: cannot open the recording \(missing): no such file"))
        let speed = try runBinary(["proxy", "--listen", "127.0.0.1:0", "--replay-speed=-1"])
        #expect(speed.exitCode == 64)
        #expect(speed.standardError.contains("--replay-speed: expected 0 or more, got -1.0"))
    }
}
