import Foundation

/// What the policy watcher compares: the path, size and modification time of every `.rules` file
/// under a folder, hidden ones left out as the policy loader leaves them out, each read through its
/// symbolic links (a Kubernetes ConfigMap's files are links the kubelet repoints when the ConfigMap
/// changes); a missing or unreadable folder has an empty fingerprint.
struct PolicyFingerprint: Equatable, Sendable {
    private var files: [String: [Double]] = [:]

    init(directory: String) {
        let manager = FileManager.default
        guard let enumerator = manager.enumerator(atPath: directory) else { return }
        for case let path as String in enumerator {
            if path.hasPrefix(".") || path.contains("/.") {
                enumerator.skipDescendants()
                continue
            }
            guard path.hasSuffix(".rules") else { continue }
            let resolved = URL(fileURLWithPath: directory + "/" + path).resolvingSymlinksInPath().path
            let attributes = try? manager.attributesOfItem(atPath: resolved)
            let size = (attributes?[.size] as? NSNumber)?.doubleValue ?? -1
            let modified = (attributes?[.modificationDate] as? Date)?.timeIntervalSince1970 ?? -1
            files[path] = [size, modified]
        }
    }
}
