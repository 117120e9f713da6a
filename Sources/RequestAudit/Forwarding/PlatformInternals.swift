import AuditLocking
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
    @_spi(Reflection) import Swift
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
            // One task of each kind that reads differently, each read twice: the second read of a
            // case goes by its tag.
            let delegateTask = session.dataTask(with: url)
            let downloadTask = session.downloadTask(with: url) { _, _, _ in }
            defer {
                delegateTask.cancel()
                downloadTask.cancel()
            }
            let expected: [(URLSessionTask, CallerSession.Behaviour)] = [
                (task, .dataCompletionHandler(hasTaskDelegate: false)), (delegateTask, .noDelegate),
                (downloadTask, .downloadCompletionHandler),
            ]
            let isReadable = workQueue.sync {
                (expected + expected).allSatisfy { task, behaviour in
                    PlatformInternals.behaviour(of: task.taskIdentifier, in: registry, sessionHasDelegate: false)
                        == behaviour
                }
            }
            guard isReadable else { return "URLSession task registry behaviours not readable" }
            return nil
        #else
            // Apple's URL loading system calls a protocol's client on the thread that started the
            // load and has no shared work queue: the relay is built and tested for FoundationNetworking.
            return "the in-app interceptor runs on Linux (FoundationNetworking) only"
        #endif
    }()

    /// Nil when the body of an upload task can be read (``knownBody(of:)``), which recordings need
    /// to record and match uploads; otherwise what is missing. Probed once, with a task made and
    /// read back.
    static let uploadBodyProblem: String? = {
        #if canImport(FoundationNetworking)
            guard let url = URL(string: "http://127.0.0.1:9/") else { return "cannot make a probe URL" }
            let session = URLSession(configuration: .ephemeral)
            defer { session.finishTasksAndInvalidate() }
            var request = URLRequest(url: url)
            request.httpMethod = "POST"
            let probe = Data("RequestAudit upload probe".utf8)
            let task = session.uploadTask(with: request, from: probe) { _, _, _ in }
            defer { task.cancel() }
            return knownBody(of: task)?.bytes == probe ? nil : "URLSessionTask.knownBody not readable"
        #else
            return problem
        #endif
    }()

    /// Throws when interception cannot run faithfully on this Foundation; with `recordsUploads`,
    /// also when upload bodies cannot be read for a recording.
    static func check(recordsUploads: Bool = false) throws(RequestAuditError) {
        if let problem { throw .unsupportedPlatform(problem) }
        if recordsUploads, let uploadBodyProblem { throw .unsupportedPlatform(uploadBodyProblem) }
    }
}

extension PlatformInternals {
    /// The body an upload task was made with (``knownBody(of:)``).
    enum KnownBody: @unchecked Sendable {
        // @unchecked: DispatchData is an immutable value (its storage is never written after it is
        // made), which Dispatch does not mark Sendable on Linux; a URL is Sendable.
        /// `uploadTask(with:from:)`'s bytes, as the task keeps them (not copied until asked for).
        case data(DispatchData)
        /// `uploadTask(with:fromFile:)`'s file.
        case file(URL)

        /// The bytes (a file read whole); nil when the file cannot be read.
        var bytes: Data? {
            switch self {
            case .data(let data):
                // Region by region: a byte-wise copy of a large upload is several times slower.
                var bytes = Data(capacity: data.count)
                for region in data.regions {
                    unsafe region.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) in
                        unsafe bytes.append(contentsOf: buffer)
                    }
                }
                return bytes
            case .file(let file):
                return try? Data(contentsOf: file)
            }
        }
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
        /// `_TaskRegistry._Behaviour` case, and for a completion handler with a task delegate,
        /// whether the delegate is there (read only when `readsTaskDelegate`; false otherwise).
        static func behaviour(
            of identifier: Int, in registry: AnyObject, sessionHasDelegate: Bool, readsTaskDelegate: Bool = true
        ) -> CallerSession.Behaviour? {
            guard let entry = RegistryField.behaviour(ofTask: identifier, in: registry),
                let label = enumCaseName(of: entry)
            else { return nil }
            switch label {
            // FoundationNetworking then calls the session's delegate, if it has one.
            case "callDelegate": return sessionHasDelegate ? .delegate : .noDelegate
            case "dataCompletionHandler": return .dataCompletionHandler(hasTaskDelegate: false)
            case "dataCompletionHandlerWithTaskDelegate":
                guard readsTaskDelegate else { return .dataCompletionHandler(hasTaskDelegate: false) }
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

        /// The name of the case `value` (an enum) holds, or nil when it is not an enum, read with a
        /// `Mirror`: a case with a payload is the mirror's one child, labelled with its name; a case
        /// without one prints as its name.
        static func enumCaseName(of value: Any) -> String? {
            let mirror = Mirror(reflecting: value)
            guard mirror.displayStyle == .enum else { return nil }
            if let label = mirror.children.first?.label { return label }
            return String(describing: value)
        }

        /// The session `task` belongs to: its stored `session`.
        static func session(of task: URLSessionTask?) -> URLSession? {
            task.flatMap { storedValue(named: "session", in: $0) } as? URLSession
        }

        /// The body an upload task was made with, from its stored `knownBody` (a `_Body` enum):
        /// `uploadTask(with:from:)`'s bytes, or `fromFile:`'s file; nil when the task knows none
        /// (a streamed upload asks its delegate) or it cannot be read.
        static func knownBody(of task: URLSessionTask) -> KnownBody? {
            // An Optional's mirror has one child, `some`, when it holds a value.
            guard let stored = storedValue(named: "knownBody", in: task),
                let body = Mirror(reflecting: stored).children.first?.value,
                enumCaseName(of: body) != nil, let payload = Mirror(reflecting: body).children.first
            else { return nil }
            switch (payload.label, payload.value) {
            case ("data", let bytes as DispatchData): return .data(bytes)
            case ("file", let file as URL): return .file(file)
            default: return nil
            }
        }

        /// The stored property `name` of `task`, found by label in its class or a superclass.
        private static func storedValue(named name: String, in task: URLSessionTask) -> Any? {
            var mirror: Mirror? = Mirror(reflecting: task)
            while let current = mirror {
                if let child = current.children.first(where: { $0.label == name }) { return child.value }
                mirror = current.superclassMirror
            }
            return nil
        }
    #else
        static func workQueue(of session: URLSession) -> DispatchQueue? { nil }
        static func taskRegistry(of session: URLSession) -> AnyObject? { nil }
        static func behaviour(
            of identifier: Int, in registry: AnyObject, sessionHasDelegate: Bool, readsTaskDelegate: Bool = true
        ) -> CallerSession.Behaviour? { nil }
        static func session(of task: URLSessionTask?) -> URLSession? { nil }
        static func knownBody(of task: URLSessionTask) -> KnownBody? { nil }
    #endif
}

#if canImport(FoundationNetworking)
    /// Where the stored property `name` of `type` (a class or a struct) lies, and its type, as the
    /// runtime's field metadata gives them; nil when it has no such property.
    private func storedField(named name: String, of type: Any.Type) -> (offset: Int, type: Any.Type)? {
        // `.classType`, spelled by its value: the stdlib declares it a `static var`, which Swift 6
        // does not let concurrent code read.
        let options = type is AnyClass ? _EachFieldOptions(rawValue: 1 << 0) : []
        var found: (offset: Int, type: Any.Type)?
        _ = unsafe _forEachField(of: type, options: options) { fieldName, offset, fieldType, _ in
            guard unsafe String(cString: fieldName) == name else { return true }
            found = (offset, fieldType)
            return false
        }
        return found
    }

    /// A dictionary with `Int` keys whose value type is not known here, such as FoundationNetworking's
    /// `[Int: _Behaviour]`: one value is looked up without converting the whole dictionary (a cast
    /// to `[Int: Any]` boxes every entry).
    protocol IntKeyedValues {
        /// The value for `key`, if there is one.
        func value(forIntKey key: Int) -> Any?
    }

    extension Dictionary: IntKeyedValues where Key == Int {
        func value(forIntKey key: Int) -> Any? { self[key].map { $0 as Any } }
    }

    /// FoundationNetworking's task registry's `behaviours`, read where the runtime's field metadata
    /// places it in the registry object.
    ///
    /// A `Mirror` over the registry rebuilds every field's type from its mangled name on each read;
    /// on the request path that cost tens of microseconds a request. The field's offset and type are
    /// found once per registry class (`_forEachField`), and the field is read only when its type is
    /// a dictionary with `Int` keys, as the registry's own code reads it. The type is kept as a
    /// metatype of ``IntKeyedValues``, so a read opens it with no dynamic cast.
    enum RegistryField {
        /// Where `behaviours` lies in each registry class seen (one in practice); nil when it has
        /// no such field of a dictionary type with `Int` keys.
        private static let fields = Locked<[ObjectIdentifier: Field?]>([:])

        private struct Field: @unchecked Sendable {
            // @unchecked: a metatype, immutable.
            let offset: Int
            let type: any IntKeyedValues.Type
        }

        /// The entry of task `identifier` in the `behaviours` dictionary of `registry` (read it on
        /// the session's work queue, where the registry changes); nil when the registry has no such
        /// field or no entry for the task.
        static func behaviour(ofTask identifier: Int, in registry: AnyObject) -> Any? {
            guard let field = field(of: type(of: registry)) else { return nil }
            func entry<Stored: IntKeyedValues>(_ type: Stored.Type) -> Any? {
                withExtendedLifetime(registry) {
                    unsafe UnsafeRawPointer(Unmanaged.passUnretained(registry).toOpaque())
                        .load(fromByteOffset: field.offset, as: Stored.self).value(forIntKey: identifier)
                }
            }
            return _openExistential(field.type, do: entry)
        }

        private static func field(of registryClass: AnyClass) -> Field? {
            let key = ObjectIdentifier(registryClass)
            if let known = fields.withLock({ $0[key] }) { return known }
            let found = storedField(named: "behaviours", of: registryClass).flatMap { field in
                (field.type as? any IntKeyedValues.Type).map { Field(offset: field.offset, type: $0) }
            }
            fields.withLock { $0[key] = .some(found) }
            return found
        }
    }
#endif
