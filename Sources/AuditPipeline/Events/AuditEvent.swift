import AuditPolicy
import AuditReport
import Foundation

/// Something that happened to an audited request, as a value snapshot (`Sendable`, `Codable`).
public enum AuditEvent: Sendable, Codable, Equatable {
    /// A request was seen and decided; always published before its ``finished(_:)``.
    ///
    /// Published by ``AuditPipeline/admit(_:bodyBytes:at:capabilities:)``, before the request is
    /// sent, so a host can warn at once.
    case started(RequestStarted)
    /// A request ended; the record is complete and is what the audit log holds. Published within a
    /// few milliseconds of the end (for in-app requests, possibly just after the caller heard).
    case finished(AuditRecord)
    /// This subscriber's buffer was full and `count` events were dropped for it since the last
    /// notice. Other subscribers and the audit log are not affected.
    case dropped(count: Int)
    /// A new policy was loaded and is in force for requests that start from now on.
    case policyReloaded(PolicyReloaded)
    /// A policy reload failed; the previous policy stays in force.
    case policyReloadFailed(PolicyReloadFailure)

    /// The id of the request the event is about, or nil for ``dropped(count:)``.
    public var requestID: UUID? {
        switch self {
        case .started(let started): started.id
        case .finished(let record): record.id
        case .dropped, .policyReloaded, .policyReloadFailed: nil
        }
    }
}

/// A request that was seen and decided.
public struct RequestStarted: Sendable, Codable, Equatable {
    /// Unique id of the request (the same in its ``AuditEvent/finished(_:)`` record).
    public var id: UUID
    /// When it was seen.
    public var time: Date
    /// The request, redacted.
    public var request: RequestSnapshot
    /// The decision.
    public var decision: DecisionSnapshot
}

/// A `warn` verdict handed to the host's warning handler.
public struct AuditWarning: Sendable {
    /// The request's id.
    public var id: UUID
    /// The request, redacted.
    public var request: RequestSnapshot
    /// The warn rule's full id.
    public var rule: String
    /// The warn rule's message.
    public var message: String?
}

/// A policy reload that put a new policy in force.
public struct PolicyReloaded: Sendable, Codable, Equatable {
    /// The folder read.
    public var directory: String
    /// When the new policy took effect.
    public var time: Date
    /// Rules in the new policy.
    public var rules: Int
}

/// A policy reload that failed: the previous policy stays in force.
public struct PolicyReloadFailure: Sendable, Codable, Equatable, Error {
    /// The folder read.
    public var directory: String
    /// When the reload was tried.
    public var time: Date
    /// Every problem found, compiler-style (`file:line:column: error: message`).
    public var problems: [String]
}
