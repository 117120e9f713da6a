import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Reads the configuration of the session a caller's task belongs to.
///
/// FoundationNetworking applies `httpAdditionalHeaders` and `timeoutIntervalForRequest` when it sends
/// a request, not in the request a `URLProtocol` sees, and `URLSessionTask` does not expose its
/// session. Without them a forwarded request would silently lose headers or wait for the wrong
/// timeout, so the task's stored `session` is read by reflection. Tests pin that this still works;
/// if a Foundation update hides it, forwarding falls back to the request alone.
enum CallerSession {
    static func configuration(of task: URLSessionTask?) -> URLSessionConfiguration? {
        session(of: task)?.configuration
    }

    /// The serial queue the caller's session does all its work on.
    ///
    /// FoundationNetworking's `URLProtocolClient` reads the session's task registry, which "must
    /// only be accessed on the owning session's work queue", and its own protocols call the client
    /// there. A protocol that calls it from another thread races with the session adding and
    /// removing tasks; under load that corrupts the registry and crashes. So results are handed to
    /// the client on this queue.
    static func workQueue(of task: URLSessionTask?) -> DispatchQueue? {
        guard let session = session(of: task) else { return nil }
        return Mirror(reflecting: session).children.first { $0.label == "workQueue" }?.value as? DispatchQueue
    }

    private static func session(of task: URLSessionTask?) -> URLSession? {
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
}
