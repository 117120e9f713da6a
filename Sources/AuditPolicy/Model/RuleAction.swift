/// What a rule does to a request it matches.
public enum RuleAction: Sendable, Hashable {
    /// Fail the request.
    case block
    /// Send the request to `target` instead; `$0`…`$9` are replaced by the rule's captures.
    case redirect(target: RedirectTemplate)
    /// Let a person or agent decide whether to go on.
    case warn
    /// Let the request through, overriding lower-or-equal priority block, redirect and warn rules.
    case allow
    /// Count the request in statistics; never changes the verdict.
    case record

    /// The keyword used in rule files: `block`, `redirect`, `warn`, `allow` or `record`.
    public var keyword: String {
        switch self {
        case .block: "block"
        case .redirect: "redirect"
        case .warn: "warn"
        case .allow: "allow"
        case .record: "record"
        }
    }

    /// The keywords a section header accepts.
    static let keywords = ["block", "redirect", "warn", "allow", "record"]

    /// Rank used to break priority ties: allow > block > redirect > warn; nil for record rules,
    /// which never decide a verdict.
    var tieRank: Int? {
        switch self {
        case .allow: 4
        case .block: 3
        case .redirect: 2
        case .warn: 1
        case .record: nil
        }
    }

    /// The verdict a deciding rule of this action gives.
    var verdictAction: Verdict.Action? {
        switch self {
        case .allow: .allow
        case .block: .block
        case .redirect: .redirect
        case .warn: .warn
        case .record: nil
        }
    }
}
