import AuditPipeline
import AuditPolicy
import Foundation
import Synchronization
import Testing

/// Policies mounted from a Kubernetes ConfigMap, laid out as the kubelet lays them out: each file a
/// link through `..data` to a hidden, timestamped folder, and an update a swap of `..data`.
@Suite struct ConfigMapPolicyTests {
    final class ConfigMapFolder {
        let path = NSTemporaryDirectory() + "configmap-\(UUID().uuidString)"
        private var generation = 0

        init(_ rules: String) throws {
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            try publish(rules)
            try FileManager.default.createSymbolicLink(
                atPath: path + "/shop.rules", withDestinationPath: "..data/shop.rules")
        }

        /// Writes `rules` into a new timestamped folder and points `..data` at it in one rename.
        func publish(_ rules: String) throws {
            generation += 1
            let folder = "..2026_11_28_10_00_0\(generation).000000\(generation)"
            try FileManager.default.createDirectory(atPath: path + "/" + folder, withIntermediateDirectories: true)
            try Data(rules.utf8).write(to: URL(fileURLWithPath: path + "/" + folder + "/shop.rules"))
            try FileManager.default.createSymbolicLink(atPath: path + "/..data_tmp", withDestinationPath: folder)
            guard rename(path + "/..data_tmp", path + "/..data") == 0 else { throw CocoaError(.fileWriteUnknown) }
        }

        deinit { try? FileManager.default.removeItem(atPath: path) }
    }

    @Test("the kubelet's hidden folders are not read as policy: each rule is loaded once")
    func loadedOnce() throws {
        let folder = try ConfigMapFolder("[block]\nadmin ^https://shop\\.test/admin\n")
        let policy = try Policy(directory: folder.path)
        #expect(policy.rules.map(\.id) == ["shop/admin"])
    }

    @Test("watching a ConfigMap's folder reloads when the kubelet swaps its files")
    func watchSeesTheSwap() async throws {
        let folder = try ConfigMapFolder("[block]\nadmin ^https://shop\\.test/admin\n")
        let pipeline = try AuditPipeline(policy: Policy(directory: folder.path))
        let reloads = Mutex<[Int]>([])
        pipeline.watchPolicies(in: folder.path, every: .milliseconds(50)) { result in
            reloads.withLock { $0.append((try? result.get())?.rules.count ?? -1) }
        }
        try await Task.sleep(for: .milliseconds(150))
        try folder.publish("[block]\nadmin ^https://shop\\.test/admin\nexport ^https://shop\\.test/export\n")
        for _ in 0..<100 where reloads.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(20)) }
        #expect(reloads.withLock { $0 } == [2])
        #expect(pipeline.policy.evaluate(AuditRequest(method: "GET", url: "https://shop.test/export")).action == .block)
        try await pipeline.shutdown()
    }
}
