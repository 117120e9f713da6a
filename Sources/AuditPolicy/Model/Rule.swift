import AuditRegex

/// One compiled rule of a policy.
///
/// A rule is one reference to immutable storage: copying a rule into a verdict, or reading one out
/// of a policy of 100,000 rules during an evaluation, costs one reference count, not a copy of every
/// field.
public struct Rule: Sendable, Identifiable, Equatable, CustomStringConvertible {
    /// The fields, set once when the policy is compiled.
    private final class Storage: Sendable {
        let id: String
        let category: String
        let name: String
        let action: RuleAction
        let pattern: Pattern
        let field: RequestField
        let methods: Set<String>
        let priority: Int
        let message: String?
        let tags: [String]
        let location: SourceLocation
        /// What an evaluation reads of every candidate, kept as plain values so that reading them
        /// copies no payload: the action's tie rank (0 for record and cache), whether it never
        /// decides (`record`, `cache`), whether any method is admitted, and whether the field is the URL.
        let tieRank: Int
        let isNonDeciding: Bool
        let admitsEveryMethod: Bool
        let readsURL: Bool

        init(
            id: String, category: String, name: String, action: RuleAction, pattern: Pattern, field: RequestField,
            methods: Set<String>, priority: Int, message: String?, tags: [String], location: SourceLocation
        ) {
            self.id = id
            self.category = category
            self.name = name
            self.action = action
            self.pattern = pattern
            self.field = field
            self.methods = methods
            self.priority = priority
            self.message = message
            self.tags = tags
            self.location = location
            tieRank = action.tieRank ?? 0
            isNonDeciding = action.isNonDeciding
            admitsEveryMethod = methods.isEmpty
            if case .url = field { readsURL = true } else { readsURL = false }
        }
    }

    private let storage: Storage

    init(
        id: String, category: String, name: String, action: RuleAction, pattern: Pattern, field: RequestField,
        methods: Set<String>, priority: Int, message: String?, tags: [String], location: SourceLocation
    ) {
        storage = Storage(
            id: id, category: category, name: name, action: action, pattern: pattern, field: field, methods: methods,
            priority: priority, message: message, tags: tags, location: location)
    }

    /// The full id, `category/name`, unique in a policy.
    public var id: String { storage.id }
    /// The category (from `@category`, or the file name without extension).
    public var category: String { storage.category }
    /// The name given on the rule line.
    public var name: String { storage.name }
    /// What the rule does.
    public var action: RuleAction { storage.action }
    /// The compiled pattern.
    public var pattern: Pattern { storage.pattern }
    /// The request part the pattern is matched against.
    public var field: RequestField { storage.field }
    /// Methods the rule applies to (upper-case); empty means any.
    public var methods: Set<String> { storage.methods }
    /// Higher priorities win; default 0.
    public var priority: Int { storage.priority }
    /// The section's `message=`, if any.
    public var message: String? { storage.message }
    /// The section's `tags=`.
    public var tags: [String] { storage.tags }
    /// Where the rule line is.
    public var location: SourceLocation { storage.location }

    /// Whether the rule applies to requests with `method` (already upper-cased).
    public func applies(toMethod method: String) -> Bool {
        storage.admitsEveryMethod || storage.methods.contains(method)
    }

    /// Whether the rule applies to `request`'s method and its pattern matches the request's field
    /// (false when the request has no such header). Reads the fields in place: an evaluation asks
    /// this of every candidate rule.
    func matches(_ request: AuditRequest, in subjects: inout RequestSubjects) throws(PatternError) -> Bool {
        guard applies(toMethod: request.method) else { return false }
        if storage.readsURL { return try subjects.matchesURL(storage.pattern, of: request) }
        return try subjects.matches(storage.pattern, field: storage.field, of: request)
    }

    /// Whether the rule never decides a verdict (`record`, `cache`).
    var isNonDeciding: Bool { storage.isNonDeciding }

    /// The settings of a `cache` rule; nil for other rules.
    public var cacheSettings: CacheSettings? {
        if case .cache(let settings) = storage.action { settings } else { nil }
    }

    /// The action's rank in a priority tie (see ``RuleAction/tieRank``), 0 for record and cache.
    var tieRank: Int { storage.tieRank }

    /// `category/name (file:line:column)`.
    public var description: String { "\(id) (\(location))" }

    /// Rules are equal when they are the same rule of the same file.
    public static func == (lhs: Rule, rhs: Rule) -> Bool {
        lhs.storage === rhs.storage || (lhs.id == rhs.id && lhs.location == rhs.location)
    }
}
