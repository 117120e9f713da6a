import AuditPolicy
import Foundation

/// Answers a request a `[respond handler:NAME]` rule matched, in place of a server.
///
/// Register handlers in ``PipelineConfiguration/responseHandlers`` under the name the rule gives:
///
/// ```swift
/// var configuration = AuditorConfiguration()
/// configuration.customSchemes = ["bridge"]
/// configuration.responseHandlers["bridge"] = { request in
///     let answer = try await NativeBridge.call(request.request.url, body: request.body)
///     return HandlerResponse(status: 200, headers: ["Content-Type": "application/json"], body: .data(answer))
/// }
/// ```
public typealias ResponseHandler = @Sendable (HandlerRequest) async throws -> HandlerResponse

/// What a ``ResponseHandler`` is asked to answer.
public struct HandlerRequest: Sendable {
    /// The request as the caller made it (not redacted).
    public let request: AuditRequest
    /// The request's body, when the front-end can see it (in an app `httpBody`, a body stream, or
    /// an upload task's bytes or file; nil for an upload streamed from its delegate).
    public let body: Data?
    /// The full id of the rule that named the handler.
    public let rule: String

    /// Creates a handler request.
    public init(request: AuditRequest, body: Data?, rule: String) {
        self.request = request
        self.body = body
        self.rule = rule
    }
}

/// A local response: status, headers and a body given whole or as a stream of chunks.
public struct HandlerResponse: Sendable {
    /// A response body.
    public enum Body: Sendable {
        /// The whole body at once.
        case data(Data)
        /// Chunks as the handler produces them; a delegate-based caller gets each as it comes. An
        /// error thrown by the stream fails the request with it.
        case stream(AsyncThrowingStream<Data, Error>)
    }

    /// The status (200–599).
    public var status: Int
    /// The header fields. `Content-Length` is added for a whole body when missing.
    public var headers: [String: String]
    /// The body.
    public var body: Body

    /// Creates a response.
    public init(status: Int = 200, headers: [String: String] = [:], body: Body = .data(Data())) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// The response a rule's body or file gives: its status, `Content-Type` (when it has a body
    /// type) and `Content-Length`; nil when a handler gives it.
    public init?(_ local: LocalResponse) {
        guard local.handler == nil, let status = local.status else { return nil }
        var headers = ["Content-Length": String(local.body.count)]
        if let type = local.contentType { headers["Content-Type"] = type }
        self.init(status: status, headers: headers, body: .data(Data(local.body)))
    }

    /// The response with `Content-Length` set for a whole body, when the handler left it out.
    var withContentLength: HandlerResponse {
        guard case .data(let data) = body,
            !headers.keys.contains(where: { $0.caseInsensitiveCompare("Content-Length") == .orderedSame })
        else { return self }
        var response = self
        response.headers["Content-Length"] = String(data.count)
        return response
    }
}
