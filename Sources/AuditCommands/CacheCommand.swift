import ArgumentParser
import AuditCache
import AuditRegex
import Foundation

/// `audit cache`: what cache rules have kept in a cache folder, and removing it.
struct CacheCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cache",
        abstract:
            "List, count and purge the responses cache rules kept (audit proxy --cache-dir, or a running proxy's).",
        subcommands: [List.self, Stats.self, Purge.self]
    )

    /// The folder and an optional URL pattern, shared by the subcommands.
    struct Selection: ParsableArguments {
        @Option(
            name: .customLong("cache-dir"),
            help: """
                The cache folder (as given to audit proxy --cache-dir). Default: the temporary one of the running \
                audit proxy or audit run that was given none.
                """)
        var cacheDirectory: String?

        @Argument(help: "A PCRE2 pattern the entries' URLs must match (default: every entry).")
        var pattern: String?

        /// `--cache-dir`, or else the one temporary cache folder a running proxy has open.
        func folder() throws -> String {
            if let cacheDirectory { return cacheDirectory }
            let running = CacheOptions.temporaryFoldersInUse()
            guard running.count == 1 else {
                throw ValidationError(
                    running.isEmpty
                        ? "no --cache-dir, and no running audit proxy or audit run keeps a temporary cache in "
                            + "\(NSTemporaryDirectory()): give --cache-dir DIR"
                        : "no --cache-dir, and \(running.count) running proxies keep temporary caches "
                            + "(\(running.joined(separator: ", "))): give --cache-dir with one of them")
            }
            return running[0]
        }

        /// The cache folder, opened.
        func open() throws -> HTTPCache {
            let cacheDirectory = try folder()
            guard FileManager.default.fileExists(atPath: cacheDirectory + "/entries") else {
                throw ValidationError("--cache-dir: '\(cacheDirectory)' is not a cache folder (it has no entries/)")
            }
            do {
                return try HTTPCache(directory: cacheDirectory, maximumBytes: Int.max, isShared: true)
            } catch {
                throw ValidationError(error.description)
            }
        }

        /// The cache folder opened, and the entries the pattern selects.
        func entries() throws -> (HTTPCache, [StoredHead]) {
            let cache = try open()
            let matcher = try self.matcher()
            return (cache, cache.entries().filter { matcher($0.url) })
        }

        func matcher() throws -> (String) -> Bool {
            guard let pattern else { return { _ in true } }
            do {
                let compiled = try Pattern(pattern)
                return { (try? compiled.matches($0)) ?? false }
            } catch {
                throw ValidationError("pattern '\(pattern)': \(error)")
            }
        }
    }

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "ls",
            abstract: "List the stored responses, most recently used first, under a header line (nothing when none).")
        @OptionGroup var selection: Selection

        func run() throws {
            let (_, entries) = try selection.entries()
            guard !entries.isEmpty else { return }
            let now = Date()
            Self.row("STATUS", "BYTES", "AGE", "RULE", "URL")
            for head in entries {
                let age = Int(now.timeIntervalSince(head.responseTime))
                Self.row(String(head.status), String(head.bodyLength), "\(age)s", head.rule ?? "-", head.url)
            }
        }

        private static func row(_ status: String, _ bytes: String, _ age: String, _ rule: String, _ url: String) {
            CommandOutput.line(
                "\(status.padded(6))  \(bytes.leftPadded(10))  \(age.leftPadded(8))  \(rule.padded(24))  \(url)")
        }
    }

    struct Stats: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "stats", abstract: "Count the stored responses and their bytes, per host.")
        @OptionGroup var selection: Selection

        func run() throws {
            let (cache, entries) = try selection.entries()
            var hosts: [String: (count: Int, bytes: Int)] = [:]
            for head in entries {
                let host = URLComponents(string: head.url)?.host ?? "-"
                hosts[host, default: (0, 0)].count += 1
                hosts[host, default: (0, 0)].bytes += head.bodyLength
            }
            let usage = cache.usage
            CommandOutput.line(
                "\(plural(entries.count, "entry", plural: "entries")), "
                    + "\(entries.reduce(0) { $0 + $1.bodyLength }) body bytes"
                    + " (folder: \(plural(usage.entries, "entry", plural: "entries")), \(usage.bytes) bytes on disk)")
            for (host, count) in hosts.sorted(by: { ($0.value.bytes, $1.key) > ($1.value.bytes, $0.key) }) {
                CommandOutput.line("  \(host.padded(40)) \(String(count.count).leftPadded(6)) \(count.bytes) bytes")
            }
        }
    }

    struct Purge: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "purge", abstract: "Remove the stored responses whose URL matches (all without a pattern).")
        @OptionGroup var selection: Selection

        func run() throws {
            let cache = try selection.open()
            let removed = cache.purge(where: try selection.matcher())
            CommandOutput.line("removed \(removed) \(removed == 1 ? "entry" : "entries")")
        }
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }

    fileprivate func padded(_ width: Int) -> String {
        count >= width ? self : self + String(repeating: " ", count: width - count)
    }
}
