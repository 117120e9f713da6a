import Foundation

/// What the policy watcher compares: the path, size and modification time of every `.rules` file
/// under a folder (a missing or unreadable folder has an empty fingerprint).
struct PolicyFingerprint: Equatable, Sendable {
    private var files: [String: [Double]] = [:]

    init(directory: String) {
        let manager = FileManager.default
        guard let enumerator = manager.enumerator(atPath: directory) else { return }
        for case let path as String in enumerator where path.hasSuffix(".rules") {
            let attributes = try? manager.attributesOfItem(atPath: directory + "/" + path)
            let size = (attributes?[.size] as? NSNumber)?.doubleValue ?? -1
            let modified = (attributes?[.modificationDate] as? Date)?.timeIntervalSince1970 ?? -1
            files[path] = [size, modified]
        }
    }
}
