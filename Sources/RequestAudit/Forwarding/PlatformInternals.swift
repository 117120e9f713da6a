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
/// read by reflection, here and nowhere else (FoundationNetworking only; on other platforms they are
/// nil); when a Foundation release moves them, ``check()`` says so and `install` throws, rather than
/// running a path known to crash or to lose the caller's data.
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
            guard let workQueue = workQueue(of: session) else { return "URLSession.workQueue not found" }
            let task = session.dataTask(with: url) { _, _, _ in }
            defer { task.cancel() }
            guard PlatformInternals.session(of: task) === session else { return "URLSessionTask.session not found" }
            guard let registry = taskRegistry(of: session) else {
                return "URLSession.taskRegistry not found"
            }
            let behaviour = workQueue.sync {
                PlatformInternals.behaviour(of: task.taskIdentifier, in: registry, sessionHasDelegate: false)
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

// The reflection itself, in one place: FoundationNetworking's private fields, read by name.
extension PlatformInternals {
    #if canImport(FoundationNetworking)
        /// The serial queue `session` does all its work on, or nil when reflection cannot find it.
        static func workQueue(of session: URLSession) -> DispatchQueue? {
            Mirror(reflecting: session).children.first { $0.label == "workQueue" }?.value as? DispatchQueue
        }

        /// The session's task registry, or nil when reflection cannot find it.
        static func taskRegistry(of session: URLSession) -> AnyObject? {
            guard let child = Mirror(reflecting: session).children.first(where: { $0.label == "taskRegistry" }) else {
                return nil
            }
            return type(of: child.value) is AnyClass ? child.value as AnyObject : nil
        }

        /// The behaviour the registry keeps for the task with `identifier`: the name of its
        /// `_TaskRegistry._Behaviour` case, and for a completion handler with a task delegate, whether the
        /// delegate is there.
        static func behaviour(of identifier: Int, in registry: AnyObject, sessionHasDelegate: Bool) -> CallerSession
            .Behaviour?
        {
            // The registry's `behaviours` is a `[Int: _Behaviour]`: cast to `[Int: Any]`, it is
            // looked up by identifier, and only the task's own entry is read. Its case is named by
            // the runtime (as `String(describing:)` names an enum case) rather than by a Mirror:
            // measured alone, 1.9 µs against 4.5 µs, and reflecting on every entry cost more still.
            guard
                let behaviours = Mirror(reflecting: registry).children.first(where: { $0.label == "behaviours" })?
                    .value as? [Int: Any],
                let entry = behaviours[identifier], let label = enumCaseName(of: entry)
            else { return nil }
            switch label {
            // FoundationNetworking then calls the session's delegate, if it has one.
            case "callDelegate": return sessionHasDelegate ? .delegate : .noDelegate
            case "dataCompletionHandler": return .dataCompletionHandler(hasTaskDelegate: false)
            case "dataCompletionHandlerWithTaskDelegate":
                // The payload is (completion handler, task delegate?); only here is a Mirror needed.
                let payload = Mirror(reflecting: Mirror(reflecting: entry).children.first?.value as Any).children.map(
                    \.value)
                let delegate = payload.count == 2 ? Mirror(reflecting: payload[1]).children.first?.value : nil
                return .dataCompletionHandler(hasTaskDelegate: delegate != nil)
            case "downloadCompletionHandler", "downloadCompletionHandlerWithTaskDelegate":
                return .downloadCompletionHandler
            default: return nil
            }
        }

        /// The name of the case `value` (an enum) holds, from the runtime's metadata, or nil when
        /// it is not an enum.
        static func enumCaseName(of value: Any) -> String? {
            func name<Value>(_ value: Value) -> String? {
                unsafe swiftEnumCaseName(value).map { unsafe String(cString: $0) }
            }
            return _openExistential(value, do: name)
        }

        /// The session `task` belongs to: its stored `session`, found by label in the task's class or a
        /// superclass.
        static func session(of task: URLSessionTask?) -> URLSession? {
            guard let task else { return nil }
            var mirror: Mirror? = Mirror(reflecting: task)
            while let current = mirror {
                for child in current.children where child.label == "session" {
                    if let session = child.value as? URLSession { return session }
                }
                mirror = current.superclassMirror
            }
            return nil
        }
    #else
        static func workQueue(of session: URLSession) -> DispatchQueue? { nil }
        static func taskRegistry(of session: URLSession) -> AnyObject? { nil }
        static func behaviour(of identifier: Int, in registry: AnyObject, sessionHasDelegate: Bool)
            -> CallerSession.Behaviour?
        { nil }
        static func session(of task: URLSessionTask?) -> URLSession? { nil }
    #endif
}

#if canImport(FoundationNetworking)
    /// The Swift runtime's name of the case an enum value holds (nil for other values): what
    /// `String(describing:)` prints for a case without a payload.
    @_silgen_name("swift_EnumCaseName")
    private func swiftEnumCaseName<Value>(_ value: Value) -> UnsafePointer<CChar>?
#endif
