/// What a rule does to a request it matches.
public enum RuleAction: Sendable, Hashable {
    /// Fail the request.
    case block
    /// Send the request to `target` instead; `$0`…`$9` are replaced by the rule's captures.
    case redirect(target: RedirectTemplate)
    /// Answer the request locally, without sending it.
    case respond(LocalResponder)
    /// Let a person or agent decide whether to go on.
    case warn
    /// Let the request through, overriding lower-or-equal priority block, respond, redirect and warn
    /// rules.
    case allow
    /// Count the request in statistics; never changes the verdict.
    case record
    /// Store GET and HEAD responses and serve them again (see ``CacheSettings``); never changes the
    /// verdict.
    case cache(CacheSettings)

    /// The keyword used in rule files: `block`, `redirect`, `respond`, `warn`, `allow`, `record` or
    /// `cache`.
    public var keyword: String {
        switch self {
        case .block: "block"
        case .redirect: "redirect"
        case .respond: "respond"
        case .warn: "warn"
        case .allow: "allow"
        case .record: "record"
        case .cache: "cache"
        }
    }

    /// The keywords a section header accepts.
    static let keywords = ["block", "redirect", "respond", "warn", "allow", "record", "cache"]

    /// Rank used to break priority ties: allow > block > respond > redirect > warn; nil for record
    /// and cache rules, which never decide a verdict.
    var tieRank: Int? {
        switch self {
        case .allow: 5
        case .block: 4
        case .respond: 3
        case .redirect: 2
        case .warn: 1
        case .record, .cache: nil
        }
    }

    /// The verdict a deciding rule of this action gives.
    var verdictAction: Verdict.Action? {
        switch self {
        case .allow: .allow
        case .block: .block
        case .redirect: .redirect
        case .respond: .respond
        case .warn: .warn
        case .record, .cache: nil
        }
    }

    /// Whether rules of this action never decide a verdict (`record`, `cache`).
    var isNonDeciding: Bool { tieRank == nil }

    /// The template that takes the rule's captures, and what it is called in messages.
    var captureTemplate: (RedirectTemplate, String)? {
        switch self {
        case .redirect(let target): (target, "redirect target")
        case .respond(let responder):
            if case .body(let template) = responder.source { (template, "respond body") } else { nil }
        default: nil
        }
    }
}
