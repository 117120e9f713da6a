import Foundation
import Testing

@testable import RequestAudit

#if canImport(FoundationNetworking)
    import FoundationNetworking

    /// FoundationNetworking's internals as interception reads them, on tasks that are made and never
    /// resumed (nothing is sent).
    @Suite struct PlatformInternalsTests {
        /// A session delegate that takes every default.
        final class QuietDelegate: NSObject, URLSessionDataDelegate {}

        /// Reads `task`'s behaviour on its session's work queue, as `startLoading` does.
        private func behaviour(of task: URLSessionTask, in session: URLSession) throws -> CallerSession.Behaviour? {
            let workQueue = try #require(PlatformInternals.workQueue(of: session))
            let registry = try #require(PlatformInternals.taskRegistry(of: session))
            return workQueue.sync {
                PlatformInternals.behaviour(
                    of: task.taskIdentifier, in: registry,
                    sessionHasDelegate: session.delegate is URLSessionTaskDelegate)
            }
        }

        @Test("an upload task's body reads as it was made: bytes, a file, or none for a streamed upload")
        func uploadBodiesRead() throws {
            let url = try #require(URL(string: "http://127.0.0.1:9/never-sent"))
            let session = URLSession(configuration: .ephemeral)
            defer { session.finishTasksAndInvalidate() }
            var request = URLRequest(url: url)
            request.httpMethod = "POST"
            let file = URL(fileURLWithPath: NSTemporaryDirectory() + "upload-\(UUID().uuidString)")
            try Data("from a file".utf8).write(to: file)
            let fromData = session.uploadTask(with: request, from: Data("from bytes".utf8))
            let fromFile = session.uploadTask(with: request, fromFile: file)
            let streamed = session.uploadTask(withStreamedRequest: request)
            defer { [fromData, fromFile, streamed].forEach { $0.cancel() } }
            #expect(PlatformInternals.uploadBodyProblem == nil)
            #expect(PlatformInternals.knownBody(of: fromData)?.bytes == Data("from bytes".utf8))
            #expect(PlatformInternals.knownBody(of: fromFile)?.bytes == Data("from a file".utf8))
            #expect(PlatformInternals.knownBody(of: streamed) == nil)
            #expect(PlatformInternals.knownBody(of: session.dataTask(with: request)) == nil)
        }

        @Test("every kind of task reads as it was made, the first time and again by its case's tag")
        func taskKindsRead() throws {
            let url = try #require(URL(string: "http://127.0.0.1:9/never-sent"))
            let plain = URLSession(configuration: .ephemeral)
            let withDelegate = URLSession(configuration: .ephemeral, delegate: QuietDelegate(), delegateQueue: nil)
            defer {
                plain.finishTasksAndInvalidate()
                withDelegate.finishTasksAndInvalidate()
            }
            var upload = URLRequest(url: url)
            upload.httpMethod = "POST"
            let tasks: [(URLSessionTask, URLSession, CallerSession.Behaviour)] = [
                (plain.dataTask(with: url), plain, .noDelegate),
                (withDelegate.dataTask(with: url), withDelegate, .delegate),
                (plain.dataTask(with: url) { _, _, _ in }, plain, .dataCompletionHandler(hasTaskDelegate: false)),
                (
                    plain.uploadTask(with: upload, from: Data("x".utf8)) { _, _, _ in }, plain,
                    .dataCompletionHandler(hasTaskDelegate: false)
                ),
                (plain.downloadTask(with: url) { _, _, _ in }, plain, .downloadCompletionHandler),
            ]
            defer { tasks.forEach { $0.0.cancel() } }
            for _ in 0..<2 {
                for (task, session, expected) in tasks {
                    #expect(try behaviour(of: task, in: session) == expected)
                }
            }
        }

        @Test("a task the registry does not hold has no behaviour")
        func unknownTask() throws {
            let url = try #require(URL(string: "http://127.0.0.1:9/never-sent"))
            let session = URLSession(configuration: .ephemeral)
            let other = URLSession(configuration: .ephemeral)
            defer {
                session.finishTasksAndInvalidate()
                other.finishTasksAndInvalidate()
            }
            let task = other.dataTask(with: url)
            let unrelated = session.dataTask(with: url)
            defer {
                task.cancel()
                unrelated.cancel()
            }
            let registry = try #require(PlatformInternals.taskRegistry(of: session))
            let workQueue = try #require(PlatformInternals.workQueue(of: session))
            let missing = workQueue.sync {
                PlatformInternals.behaviour(of: task.taskIdentifier + 1_000, in: registry, sessionHasDelegate: false)
            }
            #expect(missing == nil)
        }

        enum Shape {
            case empty
            case other
            case closure(@Sendable (Int?) -> Void)
            case pair(@Sendable (Int?) -> Void, AnyObject?)
            case text(String)
        }

        @Test("an enum's case is named with or without a payload")
        func enumCaseNames() {
            let named: [(Shape, String)] = [
                (.empty, "empty"), (.other, "other"), (.closure({ _ in }), "closure"), (.pair({ _ in }, nil), "pair"),
                (.pair({ _ in }, NSObject()), "pair"), (.text("a"), "text"),
            ]
            for (shape, name) in named {
                #expect(PlatformInternals.enumCaseName(of: shape) == name)
            }
        }

        @Test("values that are not enums have no case name")
        func notEnums() {
            #expect(PlatformInternals.enumCaseName(of: 42) == nil)
            #expect(PlatformInternals.enumCaseName(of: "text") == nil)
            #expect(PlatformInternals.enumCaseName(of: NSObject()) == nil)
        }

        @Test("a session's work queue cannot be given another target: libdispatch stops the process")
        func workQueueKeepsItsTarget() async {
            await #expect(processExitsWith: .failure) {
                let session = URLSession(configuration: .ephemeral)
                PlatformInternals.workQueue(of: session)?.setTarget(queue: DispatchQueue(label: "elsewhere"))
            }
        }

        final class LooksLikeARegistry {
            var behaviours: [String: Int] = ["1": 1]
        }

        final class HasNoBehaviours {
            var tasks: [Int: Int] = [1: 1]
        }

        @Test("an object whose behaviours are not keyed by Int, or that has none, is not read")
        func foreignRegistries() {
            #expect(RegistryField.behaviour(ofTask: 1, in: LooksLikeARegistry()) == nil)
            #expect(RegistryField.behaviour(ofTask: 1, in: HasNoBehaviours()) == nil)
        }

        final class KeepsBehavioursAfterOtherFields {
            var name = "registry"
            var count = 3
            var behaviours: [Int: String] = [7: "seven", 8: "eight"]
        }

        @Test("a registry's behaviours are read at their field's offset, by task identifier")
        func registryEntries() {
            let registry = KeepsBehavioursAfterOtherFields()
            #expect(RegistryField.behaviour(ofTask: 8, in: registry) as? String == "eight")
            #expect(RegistryField.behaviour(ofTask: 7, in: registry) as? String == "seven")
            #expect(RegistryField.behaviour(ofTask: 9, in: registry) == nil)
        }
    }
#endif
