import AuditLocking
import Foundation

/// Writes exchanges to a HAR 1.2 file (the format browsers' developer tools, Charles and Proxyman
/// open) as they finish, secrets redacted before anything is written.
///
/// The file is a whole HAR document after every entry: each entry is written over the closing
/// brackets, which are written again after it. A file that already holds a HAR gets the new
/// entries after its own. Streamed bodies keep their pieces and timing in `_chunks` (a custom
/// field, as HAR allows), so a replay can pace them as they came. A response body is written as
/// the exchange keeps it: decoded, as HAR wants it, unless ``RecordedExchange/contentCoding`` names
/// a coding it still carries.
///
/// Redaction: header values and URLs as the audit log redacts them; in JSON bodies (requests
/// and responses) the values of credential-like fields (`password`, `token`, `api_key`,
/// `client_secret`, …) and secret-shaped strings; in form bodies (URL-encoded and multipart) the
/// parameters a URL's query would have redacted. Fingerprints use a key of the recorder's own that
/// is never written, so one secret has one fingerprint across what one recorder writes, and nothing
/// in the file confirms a guessed secret: a request body kept in the file is matched by a replay on
/// the SHA-256 of its redacted bytes without their fingerprints (`_redactedBodySHA256`).
public final class HARRecorder: Sendable {
    /// The file.
    public let path: String
    /// The largest body an entry keeps. A larger response body is noted by its size alone
    /// (`content._bodyOmitted`), so that recording a big download holds at most this much of it in
    /// memory, and a replay treats the entry as a miss; a larger request body by its size and its
    /// SHA-256 (`postData._bodyOmitted`, `_bodySHA256`), on which a replay still matches it.
    public let maximumBodyBytes: Int
    /// The largest body an entry keeps unless told otherwise (64 MiB).
    public static let defaultMaximumBodyBytes = 64 << 20
    private let redaction: Redaction
    private let state: Locked<State>

    private struct State {
        let handle: FileHandle
        /// Where the closing brackets start.
        var tailOffset: UInt64
        var entries: Int
    }

    private static let tail = Data("\n]}}\n".utf8)

    /// Opens `path` for recording, keeping the entries of a HAR already there.
    ///
    /// - Throws: ``RecordingError`` when the file cannot be written or
    ///   holds something other than a HAR.
    public init(
        path: String, redaction: Redaction = .default, maximumBodyBytes: Int = HARRecorder.defaultMaximumBodyBytes
    ) throws(RecordingError) {
        self.path = path
        self.maximumBodyBytes = maximumBodyBytes
        var existing: [Any] = []
        if let data = FileManager.default.contents(atPath: path), !data.isEmpty {
            guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
                let log = object["log"] as? [String: Any], let entries = log["entries"] as? [Any]
            else { throw RecordingError.notHAR(data, path: path) }
            existing = entries
        }
        var keyed = redaction
        keyed.fingerprintKey = (0..<32).map { _ in UInt8.random(in: 0...255) }
        self.redaction = keyed
        // A file recorded by an earlier version may name its fingerprint key (`log._requestAudit`):
        // the head is written anew, without it.
        let head: [String: Any] = ["version": "1.2", "creator": ["name": "RequestAudit", "version": "0.1.0"]]
        var text = Data("{\"log\":".utf8)
        guard var headJSON = try? JSONSerialization.data(withJSONObject: head, options: [.sortedKeys]) else {
            throw .cannotOpen(path: path, reason: "cannot encode the HAR header")
        }
        headJSON.removeLast()  // "}": the entries follow
        text += headJSON + Data(",\"entries\":[\n".utf8)
        for (index, entry) in existing.enumerated() {
            guard let json = try? JSONSerialization.data(withJSONObject: entry, options: [.sortedKeys]) else {
                continue
            }
            text += (index == 0 ? Data() : Data(",\n".utf8)) + json
        }
        let tailOffset = UInt64(text.count)
        text += Self.tail
        guard FileManager.default.createFile(atPath: path, contents: text, attributes: [.posixPermissions: 0o600]),
            let handle = FileHandle(forWritingAtPath: path)
        else { throw .cannotOpen(path: path, reason: "cannot write the file") }
        state = Locked(State(handle: handle, tailOffset: tailOffset, entries: existing.count))
    }

    deinit { state.withLock { try? $0.handle.close() } }

    /// The number of entries in the file.
    public var entryCount: Int { state.withLock { $0.entries } }

    /// Writes `exchange` as the file's next entry, redacted.
    public func add(_ exchange: RecordedExchange) {
        guard let json = try? JSONSerialization.data(withJSONObject: entry(exchange), options: [.sortedKeys]) else {
            return
        }
        state.withLock { state in
            let separator = state.entries == 0 ? Data() : Data(",\n".utf8)
            do {
                try state.handle.seek(toOffset: state.tailOffset)
                try state.handle.write(contentsOf: separator + json + Self.tail)
                state.tailOffset += UInt64(separator.count + json.count)
                state.entries += 1
            } catch {
                // A full disk: the entry is lost, the file stays a HAR up to the last whole entry.
                try? state.handle.seek(toOffset: state.tailOffset)
                try? state.handle.write(contentsOf: Self.tail)
            }
        }
    }

    /// The HAR entry of `exchange`.
    private func entry(_ exchange: RecordedExchange) -> [String: Any] {
        // The values hidden in the request and the response's headers are hidden wherever else the
        // response holds them too: a server that echoes a request (httpbin's `/cookies`, an OAuth
        // server naming the token it was sent) writes them where no rule names them.
        let (request, hiddenInRequest) = Redaction.collectingHidden { requestEntry(exchange) }
        let (responseHeaders, hiddenInHeaders) = Redaction.collectingHidden {
            redaction.redact(headers: exchange.responseHeaders)
        }
        let echoes = hiddenInRequest.union(hiddenInHeaders).union(
            redaction.basicCredentialParts(of: exchange.requestHeaders + exchange.responseHeaders))
        let hidingEchoes = { (text: String) in
            String(decoding: self.redaction.hidingEchoes(of: echoes, in: Array(text.utf8)), as: UTF8.self)
        }
        let body = exchange.chunks.flatMap(\.bytes)
        let receive = exchange.chunks.last?.milliseconds ?? 0
        let type = exchange.responseHeaders.value(named: "content-type") ?? ""
        var response: [String: Any] = [
            "status": exchange.status, "statusText": exchange.statusText, "httpVersion": "HTTP/1.1",
            "cookies": Self.setCookies(in: responseHeaders, received: exchange.started),
            "headers": responseHeaders.map { ["name": $0.name, "value": hidingEchoes($0.value)] },
            "content": responseContent(body, type: type, exchange: exchange, echoes: echoes),
            "redirectURL": exchange.responseHeaders.value(named: "location").map {
                hidingEchoes(redaction.redact(url: $0))
            } ?? "",
            "headersSize": -1, "bodySize": exchange.omittedBodyBytes ?? exchange.transferredBodyBytes ?? body.count,
        ]
        if exchange.chunks.count > 1 {
            response["_chunks"] = exchange.chunks.map {
                ["time": ($0.milliseconds * 1_000).rounded() / 1_000, "size": $0.bytes.count]
            }
        }
        return [
            "startedDateTime": AuditLogCoding.timestamp(exchange.started),
            "time": exchange.waitMilliseconds + receive, "request": request, "response": response,
            "cache": [String: Any](),
            "timings": ["send": 0, "wait": exchange.waitMilliseconds, "receive": receive],
        ]
    }

    /// The HAR `request` of `exchange`, redacted.
    private func requestEntry(_ exchange: RecordedExchange) -> [String: Any] {
        let url = redaction.redact(url: exchange.url)
        let headers = redaction.redact(headers: exchange.requestHeaders)
        var request: [String: Any] = [
            "method": exchange.method, "url": url, "httpVersion": "HTTP/1.1", "cookies": Self.cookies(in: headers),
            "headers": headers.map { ["name": $0.name, "value": $0.value] },
            "queryString": Self.query(of: url), "headersSize": -1,
            "bodySize": exchange.requestBodyBytes,
        ]
        if exchange.requestBody != nil || exchange.isRequestBodyOmitted {
            let declared = exchange.requestHeaders.value(named: "content-type")
            let type = declared ?? "application/octet-stream"
            var postData: [String: Any] = [
                "text": "", "_bodyOmitted": true, "comment": omission(exchange.requestBodyBytes),
            ]
            if let body = exchange.requestBody {
                let redacted = redaction.redact(requestBody: body, type: declared)
                postData = content(redacted, size: body.count, type: type)
                request["_redactedBodySHA256"] = HARReplay.unkeyedDigest(ofRedacted: redacted).hexString
            } else {
                request["_bodySHA256"] = exchange.requestBodySHA256.hexString
            }
            postData["mimeType"] = type
            postData.removeValue(forKey: "size")
            if let coding = exchange.requestContentCoding { postData["_contentCoding"] = coding }
            request["postData"] = postData
        }
        if exchange.isRequestBodyIncomplete { request["_bodyIncomplete"] = true }
        return request
    }

    /// The response's HAR `content`: its body decoded, with the bytes its content coding saved
    /// (`compression`), or, when the coding could not be undone, still coded and named in
    /// `_contentCoding` (a custom field: HAR's body is the decoded one); redacted, and the secrets
    /// of the exchange (`echoes`) hidden wherever it holds them.
    private func responseContent(_ body: [UInt8], type: String, exchange: RecordedExchange, echoes: Set<String>)
        -> [String: Any]
    {
        if let omitted = exchange.omittedBodyBytes {
            return [
                "size": omitted, "mimeType": type, "text": "", "_bodyOmitted": true, "comment": omission(omitted),
            ]
        }
        let redacted = redaction.hidingEchoes(of: echoes, in: redaction.redact(body: body, type: type))
        var content = content(redacted, size: body.count, type: type)
        if let transferred = exchange.transferredBodyBytes { content["compression"] = body.count - transferred }
        if let coding = exchange.contentCoding { content["_contentCoding"] = coding }
        return content
    }

    /// Why a body of `bytes` is not in the recording.
    private func omission(_ bytes: Int) -> String {
        "the body (\(bytes) bytes) is larger than the recording keeps (\(maximumBodyBytes) bytes)"
    }

    /// A HAR `content` object for the body of `size` bytes whose redacted bytes are `redacted`:
    /// UTF-8 text, or base64 for anything else, control characters other than tab and line ends
    /// included (JSON would write each as six bytes).
    private func content(_ redacted: [UInt8], size: Int, type: String) -> [String: Any] {
        var content: [String: Any] = ["size": size, "mimeType": type]
        let isText = !redacted.contains { ($0 < 0x20 && $0 != 0x09 && $0 != 0x0A && $0 != 0x0D) || $0 == 0x7F }
        if isText, let text = String(validating: redacted, as: UTF8.self) {
            content["text"] = text
        } else {
            content["text"] = Data(redacted).base64EncodedString()
            content["encoding"] = "base64"
        }
        return content
    }

    /// HAR `cookies` of a request: each cookie of its (redacted) `Cookie` headers.
    private static func cookies(in headers: [RequestSnapshot.Header]) -> [[String: Any]] {
        headers.filter { $0.name.lowercased() == "cookie" }.flatMap { header in
            Redaction.cookies(inCookieHeader: header.value).map {
                ["name": $0.nameText, "value": $0.valueText]
            }
        }
    }

    /// HAR `cookies` of a response received at `received`: the cookie each of its (redacted)
    /// `Set-Cookie` headers sets, with its path, domain, expiry (from `Max-Age`, else `Expires`),
    /// `httpOnly` and `secure` when it has them.
    private static func setCookies(in headers: [RequestSnapshot.Header], received: Date) -> [[String: Any]] {
        headers.filter { $0.name.lowercased() == "set-cookie" }.flatMap {
            Redaction.cookies(inSetCookie: $0.value)
        }.map { cookie, attributes in
            var entry: [String: Any] = ["name": cookie.nameText, "value": cookie.valueText]
            var expires: Date?
            var maximumAge: Date?
            for attribute in attributes {
                let value = attribute.valueText
                switch (attribute.name == nil ? value : attribute.nameText).lowercased() {
                case "path": entry["path"] = value
                case "domain": entry["domain"] = value
                case "httponly": entry["httpOnly"] = true
                case "secure": entry["secure"] = true
                case "expires": expires = HTTPDate.parse(value)
                case "max-age": maximumAge = Int(value).map { received.addingTimeInterval(TimeInterval($0)) }
                default: break
                }
            }
            if let expiry = maximumAge ?? expires { entry["expires"] = AuditLogCoding.timestamp(expiry) }
            return entry
        }
    }

    private static func query(of url: String) -> [[String: String]] {
        guard let components = URLComponents(string: url) else { return [] }
        return (components.queryItems ?? []).map { ["name": $0.name, "value": $0.value ?? ""] }
    }
}
