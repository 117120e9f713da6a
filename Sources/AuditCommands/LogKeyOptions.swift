import ArgumentParser
import Foundation

/// The HMAC key of an audit log's chain: from `--log-key-file`, else the `AUDIT_LOG_KEY`
/// environment variable; none means a plain SHA-256 chain.
struct LogKeyOptions: ParsableArguments {
    @Option(
        name: .customLong("log-key-file"),
        help: "A file whose bytes are the HMAC key of the log's chain (default: $AUDIT_LOG_KEY, else SHA-256).")
    var keyFile: String?

    /// The key's bytes, without a trailing newline; nil when none is given.
    func key() throws -> [UInt8]? {
        if let keyFile {
            guard let data = FileManager.default.contents(atPath: keyFile) else {
                throw ValidationError("--log-key-file: cannot read '\(keyFile)'")
            }
            var bytes = [UInt8](data)
            while bytes.last == UInt8(ascii: "\n") || bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
            guard !bytes.isEmpty else { throw ValidationError("--log-key-file: '\(keyFile)' is empty") }
            return bytes
        }
        guard let text = ProcessInfo.processInfo.environment["AUDIT_LOG_KEY"], !text.isEmpty else { return nil }
        return Array(text.utf8)
    }
}
