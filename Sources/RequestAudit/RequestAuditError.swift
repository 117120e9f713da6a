import AuditPipeline
import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// Errors of the embedding API, and the reason a request was refused.
///
/// A refused request fails with a `URLError` (code ``refusalCode``) whose `userInfo` carries this
/// error under ``userInfoKey``, so ordinary `URLError` handling works and the rule is one call away:
///
/// ```swift
/// do {
///     _ = try await session.data(from: url)
/// } catch let error as URLError {
///     if case .blocked(let rule, let message, _) = error.requestAuditError {
///         print("blocked by \(rule): \(message ?? "")")
///     }
/// }
/// ```
public enum RequestAuditError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A `block` rule refused the request; nothing was sent.
    case blocked(rule: String, message: String?, url: String)
    /// A `warn` rule matched and the warning was declined; nothing was sent.
    case warningDeclined(rule: String, message: String?, url: String)
    /// A `redirect` rule matched a download or upload task, which Foundation's own protocol loads and
    /// cannot send elsewhere; nothing was sent (the rule fails closed).
    case redirectUnavailable(rule: String, target: String, url: String)
    /// A `respond` rule matched a download task, which FoundationNetworking completes only for its
    /// own protocol (it writes the file); nothing was sent (the rule fails closed).
    case responseUnavailable(rule: String, url: String)
    /// A `respond` rule's handler is not registered or threw; nothing was sent.
    case responseFailed(rule: String, reason: String, url: String)
    /// This Foundation lacks what interception relies on (named in the message); nothing is installed.
    case unsupportedPlatform(String)
    /// Another auditor is installed; uninstall it first.
    case anotherAuditorInstalled
    /// The audit log could not be opened or written.
    case auditLog(String)
    /// ``Auditor/reloadPolicy(from:)`` found problems; the previous policy stays in force.
    case policyReload(PolicyReloadFailure)
    /// The cache folder (`AuditorConfiguration.cacheDirectory`) cannot be used.
    case cache(String)
    /// The recording (`AuditorConfiguration.recording`) cannot be written or read.
    case recording(String)

    /// The `URLError` code a refused request fails with.
    public static let refusalCode = URLError.Code.resourceUnavailable

    /// The `URLError.userInfo` key under which a refusal is stored.
    public static let userInfoKey = "RequestAuditError"

    /// The error for people.
    public var description: String {
        switch self {
        case .blocked(let rule, let message, let url):
            "blocked by RequestAudit rule \(rule)\(message.map { ": \($0)" } ?? "") (\(url))"
        case .warningDeclined(let rule, let message, let url):
            "warning declined for RequestAudit rule \(rule)\(message.map { ": \($0)" } ?? "") (\(url))"
        case .redirectUnavailable(let rule, let target, let url):
            "RequestAudit rule \(rule) redirects to \(target), which a download or upload task cannot follow (\(url))"
        case .responseUnavailable(let rule, let url):
            "RequestAudit rule \(rule) responds locally, which a download task cannot take on this platform (\(url))"
        case .responseFailed(let rule, let reason, let url):
            "RequestAudit rule \(rule) could not respond: \(reason) (\(url))"
        case .unsupportedPlatform(let missing):
            "RequestAudit cannot intercept on this Foundation: \(missing)"
        case .anotherAuditorInstalled:
            "another Auditor is installed; uninstall it first"
        case .auditLog(let reason), .cache(let reason), .recording(let reason):
            reason
        case .policyReload(let failure):
            "policy reload from \(failure.directory) failed; the previous policy stays in force:\n"
                + failure.problems.joined(separator: "\n")
        }
    }

    /// The `URLError` a caller's task fails with for this refusal.
    var urlError: URLError {
        var userInfo: [String: Any] = [NSLocalizedDescriptionKey: description, Self.userInfoKey: self]
        switch self {
        case .blocked(_, _, let url), .warningDeclined(_, _, let url), .redirectUnavailable(_, _, let url),
            .responseUnavailable(_, let url), .responseFailed(_, _, let url):
            if let failing = URL(string: url) { userInfo[NSURLErrorFailingURLErrorKey] = failing }
        case .anotherAuditorInstalled, .auditLog, .policyReload, .unsupportedPlatform, .cache, .recording:
            break
        }
        return URLError(Self.refusalCode, userInfo: userInfo)
    }
}

extension RequestAuditError {
    /// The embedding API's face of a pipeline error.
    init(_ error: PipelineError) {
        switch error {
        case .auditLog(let reason): self = .auditLog(reason)
        case .policyReload(let failure): self = .policyReload(failure)
        case .responseHandlerMissing(_, let rule), .responseHandlerFailed(_, let rule, _):
            self = .responseFailed(rule: rule, reason: error.description, url: "")
        }
    }
}

extension URLError {
    /// The RequestAudit refusal behind this error, if RequestAudit refused the request.
    public var requestAuditError: RequestAuditError? {
        userInfo[RequestAuditError.userInfoKey] as? RequestAuditError
    }
}

extension RequestAuditError {
    /// The error a caller gets for `refusal`.
    init(_ refusal: Refusal) {
        switch refusal.reason {
        case .blocked: self = .blocked(rule: refusal.rule, message: refusal.message, url: refusal.url)
        case .warningDeclined: self = .warningDeclined(rule: refusal.rule, message: refusal.message, url: refusal.url)
        case .redirectUnavailable(let target):
            self = .redirectUnavailable(rule: refusal.rule, target: target, url: refusal.url)
        case .responseUnavailable: self = .responseUnavailable(rule: refusal.rule, url: refusal.url)
        }
    }
}
