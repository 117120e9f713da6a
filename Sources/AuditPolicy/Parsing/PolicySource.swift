import Foundation

/// The raw content of one policy or test file, with the path used in messages.
public struct PolicySource: Sendable, Hashable {
    /// The path as the user typed it, or as found under the directory they named.
    public let file: String
    /// The file's bytes.
    public let bytes: [UInt8]

    /// A source from bytes already in memory.
    public init(file: String, bytes: [UInt8]) {
        self.file = file
        self.bytes = bytes
    }

    /// A source from text already in memory.
    public init(file: String, text: String) {
        self.init(file: file, bytes: Array(text.utf8))
    }

    /// What is at a path, symbolic links followed.
    enum ItemKind { case file, directory }

    /// What is at `path`, or nil when nothing is.
    static func itemKind(atPath path: String) -> ItemKind? {
        // Foundation answers both questions at once only through an `ObjCBool` out-parameter,
        // which Swift passes as a pointer.
        var isDirectory: ObjCBool = false
        guard unsafe FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else { return nil }
        return isDirectory.boolValue ? .directory : .file
    }

    /// Every file ending in `.suffix` under `directory`, searched recursively and sorted by path; hidden
    /// files and folders (a name starting with `.`) are left out, such as the `..data` and `..2026_…`
    /// folders the kubelet keeps beside the files of a mounted Kubernetes ConfigMap, which hold a second
    /// copy of each.
    ///
    /// - Throws: ``PolicyError/cannotRead(path:reason:)`` when the directory or a file cannot be read.
    public static func files(in directory: String, withExtension suffix: String) throws(PolicyError) -> [PolicySource] {
        guard let kind = itemKind(atPath: directory) else {
            throw .cannotRead(path: directory, reason: "no such directory")
        }
        guard kind == .directory else { throw .cannotRead(path: directory, reason: "not a directory") }
        guard let enumerator = FileManager.default.enumerator(atPath: directory) else {
            throw .cannotRead(path: directory, reason: "cannot list the directory")
        }
        let prefix = directory.hasSuffix("/") ? directory : directory + "/"
        var paths: [String] = []
        while let relative = enumerator.nextObject() as? String {
            if relative.hasPrefix(".") || relative.contains("/.") {
                enumerator.skipDescendants()
                continue
            }
            let path = prefix + relative
            if relative.hasSuffix("." + suffix), itemKind(atPath: path) == .file {
                paths.append(path)
            }
        }
        return try paths.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }.map { path throws(PolicyError) in
            guard let data = FileManager.default.contents(atPath: path) else {
                throw .cannotRead(path: path, reason: "cannot read the file")
            }
            return PolicySource(file: path, bytes: [UInt8](data))
        }
    }
}
