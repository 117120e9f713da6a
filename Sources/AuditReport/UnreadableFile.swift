import Foundation

/// Why a file that was to be read could not be, in a user's words: `no such file`, `it is a
/// folder`, `permission denied`.
package enum UnreadableFile {
    /// The reason `path` cannot be read, looked up after opening it failed.
    package static func reason(_ path: String) -> String {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return "no such file" }
        if attributes[.type] as? FileAttributeType == .typeDirectory { return "it is a folder" }
        return FileManager.default.isReadableFile(atPath: path) ? "cannot read it" : "permission denied"
    }
}
