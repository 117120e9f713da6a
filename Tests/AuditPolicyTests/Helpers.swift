import AuditPolicy
import Foundation
import Testing

/// Source text with a `1️⃣` marker where a diagnostic is expected; the marker is removed.
struct MarkedSource {
    let text: String
    let line: Int
    let column: Int

    init(_ marked: String) {
        let marker = "1️⃣"
        var line = 0
        var column = 0
        for (index, text) in marked.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            if let range = text.range(of: marker) {
                line = index + 1
                column = text.distance(from: text.startIndex, to: range.lowerBound) + 1
            }
        }
        precondition(line > 0, "no 1️⃣ marker in the source")
        self.text = marked.replacingOccurrences(of: marker, with: "")
        self.line = line
        self.column = column
    }
}

/// The diagnostics of compiling `text`, or [] when it compiles.
func diagnostics(of text: String, file: String = "test.rules") -> [Diagnostic] {
    diagnostics(ofBytes: Array(text.utf8), file: file)
}

/// The diagnostics of compiling a file of `bytes`, or [] when it compiles.
func diagnostics(ofBytes bytes: [UInt8], file: String) -> [Diagnostic] {
    do {
        _ = try Policy(sources: [PolicySource(file: file, bytes: bytes)])
        return []
    } catch {
        if case .invalidPolicy(let diagnostics) = error { return diagnostics }
        Issue.record("unexpected error \(error)")
        return []
    }
}

/// A directory of files that is removed when the value goes away.
final class TemporaryDirectory {
    let path: String

    init(files: [String: [UInt8]]) throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("ra-\(UUID().uuidString)").path
        for (name, bytes) in files {
            let url = URL(fileURLWithPath: path).appendingPathComponent(name)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(bytes).write(to: url)
        }
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    convenience init(texts: [String: String]) throws {
        try self.init(files: texts.mapValues { Array($0.utf8) })
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }
}

/// The repository's bundled `policies/` folder.
let bundledPoliciesPath = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("policies").path

extension Policy {
    /// Shorthand: the verdict for a GET (or `method`) of `url`.
    func verdict(_ url: String, method: String = "GET", headers: [String: String] = [:]) -> Verdict {
        evaluate(
            AuditRequest(
                method: method, url: url,
                headers: headers.sorted { $0.key < $1.key }.map { AuditRequest.Header(name: $0.key, value: $0.value) }
            )
        )
    }
}
