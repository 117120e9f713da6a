import AuditLocking
import AuditPolicy
import Foundation

/// The responses of a HAR recording, served again to the requests that match them.
///
/// A request matches a recorded one with the same method, canonical URL and body, each compared
/// with its secrets redacted and their fingerprints taken out (``Redaction/withoutFingerprints(_:)-([UInt8])``),
/// so that a recording needs no key and a request matches whatever value its secrets have; the URL
/// without the query parameters named in `ignoring`. A body is compared by the SHA-256 of that form
/// (decoded from its `Content-Encoding` first, as a recording keeps it), or, for one the recording
/// does not keep, of the bytes sent (`_bodySHA256`). A recorded request whose body the client
/// stopped sending because the server answered first (`request._bodyIncomplete`) matches any body,
/// after those that match exactly. Identical requests get the recorded responses in recorded order;
/// once those are used up, the last one again, or nothing (a miss) for a recording that grows
/// (under ``OnMiss/record``), so that a further one is a new episode.
public final class HARReplay: Sendable {
    /// A recorded response.
    public struct Response: Sendable {
        /// The status and its reason phrase.
        public var status: Int
        /// The reason phrase.
        public var statusText: String
        /// The headers, as recorded (redacted).
        public var headers: [RequestSnapshot.Header]
        /// The body.
        public var body: [UInt8]
        /// The body's pieces (milliseconds after the head, bytes), when it came in more than one.
        public var chunks: [(milliseconds: Double, size: Int)]
        /// Milliseconds from the request to the response head.
        public var waitMilliseconds: Double
        /// The content coding the body still carries (`_contentCoding`); nil when it carries none:
        /// a HAR keeps bodies decoded, whatever their `Content-Encoding` header says.
        public var contentCoding: String?

        /// The end-to-end headers that describe ``body`` as kept, for a client reading the bytes
        /// off the wire (a proxy's): without `Content-Encoding` when the body carries no coding.
        public var headersForKeptBody: [RequestSnapshot.Header] {
            guard contentCoding == nil else { return endToEndHeaders }
            return endToEndHeaders.filter { $0.name.lowercased() != "content-encoding" }
        }

        /// The headers without those of the recorded connection's framing (`Connection`,
        /// `Keep-Alive`, `Transfer-Encoding`, `Content-Length`): the replaying front-end frames the
        /// body itself.
        public var endToEndHeaders: [RequestSnapshot.Header] {
            headers.filter { !Self.framing.contains($0.name.lowercased()) }
        }

        private static let framing: Set<String> = [
            "connection", "keep-alive", "proxy-connection", "transfer-encoding", "content-length",
        ]
    }

    /// What happens to a request the recording has no response for.
    public enum OnMiss: String, Sendable, CaseIterable {
        /// Answer 504 with a JSON body naming the request and the recording.
        case fail
        /// Send it to the server.
        case pass
        /// Send it to the server and add the exchange to the recording (VCR's "new episodes"):
        /// the next replay answers it too. A request whose recorded responses are used up is a
        /// miss too.
        case record

        /// Whether the request goes to the server.
        public var sendsToServer: Bool { self != .fail }

        /// Whether what the server answers is added to the recording, which then grows: a request
        /// whose recorded responses are used up is a miss too.
        public var addsToRecording: Bool { self == .record }
    }

    /// The recording's file.
    public let path: String
    /// The query parameters left out of the match.
    public let ignoredParameters: Set<String>
    /// Whether a request whose recorded responses are used up gets the last one again; a miss
    /// otherwise (a recording that grows).
    private let repeatsLastResponse: Bool
    private let redaction: Redaction
    private let queues: Locked<[String: Queue]>
    /// The method and URL (as matched) of entries whose body was larger than the recording kept.
    /// Why the recording holds no response body for them: the request of each entry whose body is
    /// not in the file, by method and URL (as matched).
    private let omitted: [String: String]
    /// For the method and URL (as matched) of each entry with a response, the sizes of the request
    /// bodies that can match one.
    private let matchingBodies: [String: MatchingBodies]

    /// The sizes of the request bodies that a recorded response to one method and URL matches, so
    /// that a request whose body cannot match is a miss before its body is read.
    public struct MatchingBodies: Sendable, Equatable {
        /// The sizes of the bodies recorded with their size.
        public var sizes: Set<Int> = []
        /// Whether a body of any size can match: one was recorded cut short (`_bodyIncomplete`, it
        /// matches any body), with its digest and without its size, or with secrets (their values'
        /// lengths may differ).
        public var isAnySize = false
        /// The size of the largest body matched on its redacted form (a body with secrets: what a
        /// recording keeps): a request body up to this size is held to its end, to be decoded and
        /// redacted for its match.
        public var largestRedacted = 0

        /// Bodies of `sizes`, or of any size when `isAnySize`, those up to `largestRedacted` bytes
        /// matched on their redacted form.
        public init(sizes: Set<Int> = [], isAnySize: Bool = false, largestRedacted: Int = 0) {
            self.sizes = sizes
            self.isAnySize = isAnySize
            self.largestRedacted = largestRedacted
        }

        /// The size of the largest body that can match (`Int.max` when any size can).
        public var largest: Int { isAnySize ? .max : sizes.max() ?? 0 }

        /// Whether a body of `size` bytes can match.
        public func canMatch(size: Int) -> Bool { isAnySize || sizes.contains(size) }

        /// Adds a body of `size` bytes (nil: of any size), matched on its redacted digest when
        /// `isRedacted` (one of any size, a body with secrets, is held up to what a recording keeps).
        mutating func insert(_ size: Int?, isRedacted: Bool) {
            if let size { sizes.insert(size) } else { isAnySize = true }
            if isRedacted { largestRedacted = max(largestRedacted, size ?? HARRecorder.defaultMaximumBodyBytes) }
        }
    }

    private struct Queue {
        var responses: [Response]
        var next = 0
    }

    /// Reads the recording at `path`, whose secrets were hidden by `redaction` (as requests are to be
    /// before they are matched). Entries whose response has status 0 (a browser's request that got
    /// none) are left out. Under `onMiss` ``OnMiss/record`` the recording grows: a request whose
    /// recorded responses are used up is a miss rather than answered the last one again.
    ///
    /// - Throws: ``RecordingError`` when it cannot be read, is not a HAR, or has entries without
    ///   what a replay needs (each named by its number and field).
    public init(
        path: String, ignoring parameters: Set<String> = [], redaction: Redaction = .default,
        onMiss: OnMiss = .fail
    ) throws(RecordingError) {
        self.path = path
        ignoredParameters = parameters
        repeatsLastResponse = !onMiss.addsToRecording
        self.redaction = redaction
        guard let data = FileManager.default.contents(atPath: path) else {
            throw .cannotOpen(path: path, reason: UnreadableFile.reason(path))
        }
        guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
            let log = object["log"] as? [String: Any], let entries = log["entries"] as? [Any]
        else { throw RecordingError.notHAR(data, path: path) }
        var queues: [String: Queue] = [:]
        var omitted: [String: String] = [:]
        var matchingBodies: [String: MatchingBodies] = [:]
        var problems: [String] = []
        for (index, entry) in entries.enumerated() {
            let valid: ValidEntry
            do {
                guard let entry = try Self.validated(entry) else { continue }
                valid = entry
            } catch {
                problems.append("entry \(index + 1): error: \(error.message)")
                continue
            }
            let (method, url) = (valid.method.uppercased(), Self.matched(valid.url, parameters, redaction))
            if let reason = Self.omission(of: valid.response) {
                omitted[method + " " + url] = reason
                continue
            }
            let (digest, size) = Self.bodyDigestAndSize(valid.request, redaction)
            let key = Self.key(method: method, url: url, digest: digest)
            matchingBodies[method + " " + url, default: MatchingBodies()].insert(
                size, isRedacted: digest.hasPrefix(Self.redactedDigestMark))
            queues[key, default: Queue(responses: [])].responses.append(
                Self.response(valid.response, entry: valid.entry))
        }
        guard problems.isEmpty else { throw .invalidEntries(path: path, problems: problems) }
        self.queues = Locked(queues)
        self.omitted = omitted
        self.matchingBodies = matchingBodies
    }

    private struct EntryProblem: Error {
        let message: String
    }

    /// An entry with what a replay needs.
    private struct ValidEntry {
        let entry: [String: Any]
        let request: [String: Any]
        let method: String
        let url: String
        let response: [String: Any]
    }

    /// The request and response of `entry`, nil for an entry without a response (status 0: a
    /// browser's request that was blocked or cancelled).
    ///
    /// - Throws: what keeps the entry from being replayed, naming the field.
    private static func validated(_ entry: Any) throws(EntryProblem) -> ValidEntry? {
        func problem(_ message: String) -> EntryProblem { EntryProblem(message: message) }
        /// `name is missing`, or `name is not kind` when it is there but of another type or empty.
        func absent(_ name: String, _ value: Any?, _ kind: String) -> EntryProblem {
            problem(value == nil || value is NSNull ? "\(name) is missing" : "\(name) is not \(kind)")
        }
        guard let entry = entry as? [String: Any] else { throw problem("not an object") }
        guard let request = entry["request"] as? [String: Any] else {
            throw absent("request", entry["request"], "an object")
        }
        guard let method = request["method"] as? String, !method.isEmpty else {
            throw absent("request.method", request["method"], "a method")
        }
        guard let url = request["url"] as? String, !url.isEmpty else {
            throw absent("request.url", request["url"], "a URL")
        }
        guard let response = entry["response"] as? [String: Any] else {
            throw absent("response", entry["response"], "an object")
        }
        guard let status = response["status"] as? Int, (0...999).contains(status) else {
            throw absent("response.status", response["status"], "a status code")
        }
        guard status > 0 else { return nil }
        let content = response["content"] as? [String: Any]
        if (content?["encoding"] as? String) == "base64", let text = content?["text"] as? String,
            Data(base64Encoded: text) == nil
        {
            throw problem("response.content.text is not base64, as its encoding says")
        }
        return ValidEntry(entry: entry, request: request, method: method, url: url, response: response)
    }

    /// The number of recorded responses.
    public var count: Int { queues.withLock { $0.values.reduce(0) { $0 + $1.responses.count } } }

    /// What a miss says, for the request of `method` and `url`: no response of this recording
    /// matches it.
    public func missMessage(method: String, url: String) -> String {
        let message = "no recorded response matches \(method) \(url) in the recording \(path)"
        guard let reason = omitted[method.uppercased() + " " + matchedURL(url)] else { return message }
        return message + " (it holds that request without its response body, \(reason))"
    }

    /// Why `response` has no body to replay, nil when it has one (an empty one included): its body
    /// was larger than the recording kept (`_bodyOmitted`), or the tool that wrote the file left
    /// out a body of some bytes (no `content.text`, as a browser does for a body it did not keep).
    /// A redirect's missing body is no loss: it replays without one.
    private static func omission(of response: [String: Any]) -> String? {
        let content = response["content"] as? [String: Any]
        if content?["_bodyOmitted"] as? Bool == true { return "larger than the recording kept" }
        guard content?["text"] == nil, let size = content?["size"] as? Int, size > 0,
            let status = response["status"] as? Int, !(300..<400).contains(status)
        else { return nil }
        return "which the file does not hold (\(size) bytes)"
    }

    /// The sizes of the request bodies of `method` to `url` that a recorded response matches; nil
    /// when the recording has no response for that method and URL, so that such a request is a miss
    /// whatever its body. A request whose body is announced with another size, or grows past the
    /// largest, is a miss too, before its end.
    public func matchingBodies(method: String, url: String) -> MatchingBodies? {
        matchingBodies[method.uppercased() + " " + matchedURL(url)]
    }

    /// The digests a request body is matched on.
    public struct BodyDigests: Sendable, Equatable {
        /// The SHA-256 of the body (decoded from its content coding) redacted without fingerprints
        /// (``HARReplay/redactedDigest(of:type:)``); nil when it was not held.
        public var redacted: [UInt8]?
        /// The SHA-256 of the bytes sent.
        public var sent: [UInt8]

        /// Digests of a body.
        public init(redacted: [UInt8]?, sent: [UInt8]) {
            self.redacted = redacted
            self.sent = sent
        }

        /// A request without a body.
        public static let none = BodyDigests(redacted: SHA256.hash([]), sent: SHA256.hash([]))
    }

    /// The next recorded response for a request of `method` to `url` with `body` (of `type`, the
    /// request's `Content-Type`, and no content coding); nil on a miss.
    public func response(method: String, url: String, body: [UInt8]?, type: String? = nil) -> Response? {
        let digests = body.map { BodyDigests(redacted: redactedDigest(of: $0, type: type), sent: SHA256.hash($0)) }
        return response(method: method, url: url, body: digests ?? .none)
    }

    /// The SHA-256 on which a recorded body kept in the file is matched: of `body` (decoded, of
    /// `type`, the request's `Content-Type`) with its secrets hidden and their fingerprints taken out.
    public func redactedDigest(of body: [UInt8], type: String?) -> [UInt8] {
        Self.unkeyedDigest(ofRedacted: redaction.redact(requestBody: body, type: type))
    }

    /// The SHA-256 of a redacted body without its fingerprints: the digest a recording writes
    /// (`_redactedBodySHA256`) and a replay matches a request's body on.
    static func unkeyedDigest(ofRedacted redacted: [UInt8]) -> [UInt8] {
        SHA256.hash(Redaction.withoutFingerprints(redacted))
    }

    /// The next recorded response for a request of `method` to `url` whose body has `digests`
    /// (``BodyDigests/none`` when it has none); nil on a miss.
    public func response(method: String, url: String, body digests: BodyDigests) -> Response? {
        let (method, url) = (method.uppercased(), matchedURL(url))
        let digests = [digests.redacted.map { Self.redactedDigestMark + $0.hexString }, digests.sent.hexString]
        let keys = (digests.compactMap { $0 } + [Self.anyBody]).map { Self.key(method: method, url: url, digest: $0) }
        return queues.withLock { [repeatsLastResponse] queues in
            guard
                let key = keys.first(where: { key in
                    queues[key].map { repeatsLastResponse || $0.next < $0.responses.count } ?? false
                }),
                var queue = queues[key]
            else { return nil }
            let response = queue.responses[min(queue.next, queue.responses.count - 1)]
            queue.next += 1
            queues[key] = queue
            return response
        }
    }

    /// `url` as it is matched (``matched(_:_:_:)``).
    private func matchedURL(_ url: String) -> String { Self.matched(url, ignoredParameters, redaction) }

    /// `url` as it is matched, recorded or requested: canonical, its secrets hidden by `redaction`
    /// and their fingerprints taken out, without the query parameters named in `parameters`. (A
    /// value a recording hid already stays hidden.)
    private static func matched(_ url: String, _ parameters: Set<String>, _ redaction: Redaction) -> String {
        let canonical = (try? CanonicalURL(url))?.string ?? url
        // Redaction replaces values with `REDACTED`, which keeps a canonical URL canonical.
        return withoutIgnored(Redaction.withoutFingerprints(redaction.redact(url: canonical)), parameters)
    }

    static func key(method: String, url: String, digest: String) -> String { "\(method) \(url) \(digest)" }

    /// The digest a recorded request's body is matched on (hex, after ``redactedDigestMark`` when
    /// it is the redacted form's), and that body's size in bytes: the redacted digest and the size
    /// sent as the recording gives them (`_redactedBodySHA256`, `bodySize`), else the sent bytes'
    /// digest (`_bodySHA256`: a body larger than the recording kept, or a recording of an earlier
    /// version), else the redacted digest of `postData.text` (a HAR from elsewhere, its body as
    /// sent), else an empty body's; any body (``anyBody``) for a request the client stopped
    /// sending (`_bodyIncomplete`). The size is nil when the body may have any: cut short,
    /// recorded without its size, or holding secrets, whose values (and so lengths) may differ.
    private static func bodyDigestAndSize(_ request: [String: Any], _ redaction: Redaction) -> (
        digest: String, size: Int?
    ) {
        if request["_bodyIncomplete"] as? Bool == true { return (anyBody, nil) }
        let size = (request["bodySize"] as? Int).flatMap { $0 >= 0 ? $0 : nil }
        let recorded = request["_redactedBodySHA256"] as? String
        if recorded == nil, let digest = request["_bodySHA256"] as? String { return (digest, size) }
        let postData = request["postData"] as? [String: Any] ?? [:]
        let body = bytes(of: postData)
        let unkeyed = Redaction.withoutFingerprints(
            redaction.redact(requestBody: body, type: postData["mimeType"] as? String))
        let digest = recorded ?? SHA256.hash(unkeyed).hexString
        // A body with secrets may have any size: their values' lengths may differ.
        return (redactedDigestMark + digest, unkeyed != body ? nil : recorded == nil ? body.count : size)
    }

    /// The bytes of a HAR `content` or `postData` object: its `text`, base64-decoded when its
    /// `encoding` says so (empty when that is not base64: such an entry was refused at load).
    private static func bytes(of content: [String: Any]) -> [UInt8] {
        let text = content["text"] as? String ?? ""
        return (content["encoding"] as? String) == "base64"
            ? Data(base64Encoded: text).map(Array.init) ?? [] : Array(text.utf8)
    }

    /// The digest of the key of a request that matches any body.
    static let anyBody = "*"

    /// What marks a key's digest as that of a body's redacted form.
    static let redactedDigestMark = "redacted:"

    /// `canonical` (a canonical URL) without the query parameters named in `parameters`.
    private static func withoutIgnored(_ canonical: String, _ parameters: Set<String>) -> String {
        guard !parameters.isEmpty, let mark = canonical.firstIndex(of: "?") else { return canonical }
        let kept = canonical[canonical.index(after: mark)...].split(separator: "&").filter { pair in
            let name = pair.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
            return !parameters.contains(name.removingPercentEncoding ?? name)
        }
        return String(canonical[..<mark]) + (kept.isEmpty ? "" : "?" + kept.joined(separator: "&"))
    }

    private static func response(_ response: [String: Any], entry: [String: Any]) -> Response {
        let headers = (response["headers"] as? [[String: Any]] ?? []).compactMap { header -> RequestSnapshot.Header? in
            guard let name = header["name"] as? String, let value = header["value"] as? String else { return nil }
            return RequestSnapshot.Header(name: name, value: value)
        }
        let content = response["content"] as? [String: Any] ?? [:]
        let body = bytes(of: content)
        let chunks = (response["_chunks"] as? [[String: Any]] ?? []).compactMap { chunk -> (Double, Int)? in
            guard let time = (chunk["time"] as? NSNumber)?.doubleValue, let size = chunk["size"] as? Int else {
                return nil
            }
            return (time, size)
        }
        let wait = ((entry["timings"] as? [String: Any])?["wait"] as? NSNumber)?.doubleValue ?? 0
        return Response(
            status: response["status"] as? Int ?? 200, statusText: response["statusText"] as? String ?? "",
            headers: headers, body: body, chunks: chunks.map { (milliseconds: $0.0, size: $0.1) },
            waitMilliseconds: max(0, wait), contentCoding: content["_contentCoding"] as? String)
    }
}
