import AuditReport
import Foundation

/// What happened to an admitted request, in transport-neutral facts: ``AuditedRequest/finish(_:)``
/// makes the record from them (redacted, timed), once, in one place.
public struct Outcome: Sendable {
    /// A failure as plain values (its description is redacted in the record).
    public typealias Failure = OutcomeSnapshot.ErrorSnapshot

    /// Where the request was sent.
    public enum Destination: Sendable, Equatable {
        /// Nowhere (refused, answered locally, cancelled before sending), or not known.
        case none
        /// Where it was decided to go: the redirect target, or the request's canonical URL.
        case asDecided
        /// This URL, as sent (redacted in the record).
        case url(String)
    }

    /// The kind of ending.
    public var kind: OutcomeSnapshot.Kind
    /// The final response's status.
    public var status: Int?
    /// Body bytes delivered to the client.
    public var bytes: Int?
    /// Bytes sent on to the server (a request body, or what a client sent through a tunnel).
    public var sentBytes: Int?
    /// Where the request was sent.
    public var destination: Destination
    /// The final response's URL after HTTP redirects, as received.
    public var finalURL: String?
    /// Each HTTP redirect followed, in order, as received.
    public var redirects: [String]
    /// The failure, if it ended in one.
    public var failure: Failure?
    /// How long it took, when the front-end knows better (replayed traffic); nil: since it was admitted.
    public var durationMilliseconds: Double?

    /// Creates an outcome.
    public init(
        _ kind: OutcomeSnapshot.Kind, status: Int? = nil, bytes: Int? = nil, sentBytes: Int? = nil,
        destination: Destination = .none, finalURL: String? = nil, redirects: [String] = [], failure: Failure? = nil,
        durationMilliseconds: Double? = nil
    ) {
        self.kind = kind
        self.status = status
        self.bytes = bytes
        self.sentBytes = sentBytes
        self.destination = destination
        self.finalURL = finalURL
        self.redirects = redirects
        self.failure = failure
        self.durationMilliseconds = durationMilliseconds
    }
}

extension OutcomeSnapshot.ErrorSnapshot {
    /// The failure `error` describes, not yet redacted.
    public init(_ error: Error) {
        let nsError = error as NSError
        self.init(domain: nsError.domain, code: nsError.code, description: nsError.localizedDescription)
    }
}
