import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// The parts of FoundationNetworking that interception relies on beyond its public API, checked
/// before anything is intercepted.
///
/// A `URLProtocol` on Linux must tell its client on the caller session's work queue, deliver chunks
/// only to callers that take them, and leave downloads and uploads to Foundation's own HTTP protocol
/// (see ``RequestInfoProtocol``). The work queue, the session of a task, and how a task was made are
/// read by reflection; when a Foundation release moves them, ``check()`` says so and `install`
/// throws, rather than running a path known to crash or to lose the caller's data.
enum PlatformInternals {
    /// Foundation's built-in HTTP protocol (the first of a default session's protocol classes that
    /// takes an http URL), or nil when there is none.
    static let httpProtocolClass: URLProtocol.Type? = {
        guard let probe = URL(string: "http://127.0.0.1/") else { return nil }
        let request = URLRequest(url: probe)
        return (URLSessionConfiguration.default.protocolClasses ?? []).lazy
            .compactMap { $0 as? URLProtocol.Type }
            .first { $0 != RequestInfoProtocol.self && $0.canInit(with: request) }
    }()

    /// Nil when everything interception needs is there; otherwise what is missing.
    static let problem: String? = {
        #if canImport(FoundationNetworking)
            guard httpProtocolClass != nil else {
                return "no built-in HTTP URLProtocol in URLSessionConfiguration.default"
            }
            guard let url = URL(string: "http://127.0.0.1:9/") else { return "cannot make a probe URL" }
            let session = URLSession(configuration: .ephemeral)
            // Not invalidateAndCancel(): it reads URLSession.shared, which would make the shared
            // session now, with the protocol classes registered before install() put ours first.
            defer { session.finishTasksAndInvalidate() }
            guard let workQueue = CallerSession.workQueue(of: session) else { return "URLSession.workQueue not found" }
            let task = session.dataTask(with: url) { _, _, _ in }
            defer { task.cancel() }
            guard CallerSession.session(of: task) === session else { return "URLSessionTask.session not found" }
            guard let registry = CallerSession.taskRegistry(of: session) else {
                return "URLSession.taskRegistry not found"
            }
            let behaviour = workQueue.sync {
                CallerSession.behaviour(of: task.taskIdentifier, in: registry, sessionHasDelegate: false)
            }
            guard behaviour == .dataCompletionHandler(hasTaskDelegate: false) else {
                return "URLSession task registry behaviours not readable"
            }
            return nil
        #else
            return nil
        #endif
    }()

    /// Throws when interception cannot run faithfully on this Foundation.
    static func check() throws(RequestAuditError) {
        if let problem { throw .unsupportedPlatform(problem) }
    }
}
