import AuditPipeline
import AuditReport
import NIOCore
import NIOHTTP1

/// What the proxy sends on of a request's and a response's headers.
extension ProxyHandler {
    /// Headers that concern one connection only, never sent on (RFC 9110 §7.6.1), and the proxy's own.
    static let hopByHop: Set<String> = [
        "connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te", "trailer",
        "transfer-encoding", "upgrade", Denial.acknowledgeHeader.lowercased(),
    ]
    /// The lengths of the ``hopByHop`` names (a header of another length is none of them).
    static let hopByHopLengths = Set(hopByHop.map(\.utf8.count))

    /// The headers of `headers` to send on: hop-by-hop headers and those `Connection` names are
    /// dropped, except `Upgrade` (and its `Connection: upgrade`) when `keepsUpgrade`.
    static func endToEnd(_ headers: HTTPHeaders, keepsUpgrade: Bool) -> HTTPHeaders {
        let named = Set(headers[canonicalForm: "connection"].map { $0.lowercased() })
        var kept = HTTPHeaders()
        for (name, value) in headers {
            // Most headers are none of these: their lengths tell, without lowering the name.
            guard
                named.contains(where: { $0.utf8.count == name.utf8.count })
                    || hopByHopLengths.contains(name.utf8.count)
            else {
                kept.add(name: name, value: value)
                continue
            }
            let lowered = name.lowercased()
            if keepsUpgrade, lowered == "upgrade" {
                kept.add(name: name, value: value)
                continue
            }
            if hopByHop.contains(lowered) || named.contains(lowered) { continue }
            kept.add(name: name, value: value)
        }
        if keepsUpgrade, headers.contains(name: "upgrade") { kept.add(name: "Connection", value: "Upgrade") }
        return kept
    }

    static func upstreamHead(_ head: HTTPRequestHead, target: ProxyTarget)
        -> HTTPRequestHead
    {
        // An upgrade to cleartext HTTP/2 is not made: the proxy decides HTTP/1.1 requests only, so
        // the request goes on without it and the server answers in HTTP/1.1.
        let isH2C = isH2CUpgrade(head.headers)
        var headers = endToEnd(head.headers, keepsUpgrade: !isH2C)
        if isH2C { headers.remove(name: "HTTP2-Settings") }
        // The request body's framing is the encoder's: chunked when the client chunked it, with the
        // codings before it kept as sent (`gzip, chunked`).
        let codings = Self.transferCodings(head.headers)
        if codings.last == "chunked" {
            headers.add(name: "Transfer-Encoding", value: codings.joined(separator: ", "))
        }
        // The server acts on the request the policy decided: the Host is the decided target's.
        headers.replaceOrAdd(name: "Host", value: target.hostHeader)
        return HTTPRequestHead(
            version: .http1_1, method: head.method, uri: target.path, headers: headers)
    }

    /// Whether the request asks to upgrade to cleartext HTTP/2 (`Upgrade: h2c`).
    static func isH2CUpgrade(_ headers: HTTPHeaders) -> Bool {
        headers[canonicalForm: "upgrade"].contains { $0.lowercased() == "h2c" }
    }

    /// The transfer codings of `headers`, lower-cased, in order.
    static func transferCodings(_ headers: HTTPHeaders) -> [String] {
        headers[canonicalForm: "transfer-encoding"].map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
    }

}

extension HTTPHeaders {
    /// The headers, in order, as records, recordings and the cache keep them.
    var snapshot: [RequestSnapshot.Header] { map { RequestSnapshot.Header(name: $0.name, value: $0.value) } }
}
