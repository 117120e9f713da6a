import Foundation

/// A bundle of PEM blocks (certificates) gathered from several texts, each distinct block once, in
/// the order first seen. Trust bundles made from bundles that overlap (the system's roots, and a
/// bundle of the user's that already holds them, or one `audit env` wrote before) hold each
/// certificate once, however often they are made again.
public struct PEMBundle {
    private var blocks: [String] = []
    /// Each block kept, as its lines without surrounding whitespace and without blank lines: the
    /// same certificate however its lines end or are indented.
    private var seen: Set<String> = []

    /// An empty bundle.
    public init() {}

    /// Adds the PEM blocks of `text` (`-----BEGIN …-----` to `-----END …-----`) not already in the
    /// bundle. What lies between blocks (comments, blank lines) is left out.
    public mutating func add(_ text: String) {
        var block: [Substring] = []
        for line in text.split(omittingEmptySubsequences: false, whereSeparator: \.isNewline) {
            let line = line.trimmingWhitespace
            if block.isEmpty {
                if line.hasPrefix("-----BEGIN ") { block = [line] }
                continue
            }
            block.append(line)
            guard line.hasPrefix("-----END ") else { continue }
            let identity = block.filter { !$0.isEmpty }.joined(separator: "\n")
            if seen.insert(identity).inserted { blocks.append(block.joined(separator: "\n")) }
            block = []
        }
    }

    /// Adds the PEM blocks of the file at `path`; false when it cannot be read.
    @discardableResult
    public mutating func add(contentsOf path: String) -> Bool {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return false }
        add(text)
        return true
    }

    /// The number of blocks.
    public var count: Int { blocks.count }

    /// The blocks, each on lines of its own, ending with a line feed.
    public var text: String { blocks.map { $0 + "\n" }.joined() }
}

extension Substring {
    fileprivate var trimmingWhitespace: Substring {
        guard let first = firstIndex(where: { !$0.isWhitespace }), let last = lastIndex(where: { !$0.isWhitespace })
        else { return "" }
        return self[first...last]
    }
}
