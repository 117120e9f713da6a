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
        guard let task else { return nil }
        var mirror: Mirror? = Mirror(reflecting: task)
        while let current = mirror {
            for child in current.children where child.label == "session" {
                if let session = child.value as? URLSession { return session.configuration }
            }
            mirror = current.superclassMirror
        }
        return nil
    }
}
