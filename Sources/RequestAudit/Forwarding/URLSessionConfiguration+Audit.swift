import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension URLSessionConfiguration {
    /// The `httpAdditionalHeaders` FoundationNetworking sends with each request of a session of this
    /// configuration: those whose name and value are strings.
    var sentAdditionalHeaders: [String: String] {
        guard let headers = httpAdditionalHeaders, !headers.isEmpty else { return [:] }
        var sent: [String: String] = [:]
        for case let (name as String, value as String) in headers { sent[name] = value }
        return sent
    }
}
