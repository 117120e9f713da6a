import AuditRegex

/// One compiled rule of a policy.
public struct Rule: Sendable, Identifiable, Equatable, CustomStringConvertible {
    /// The full id, `category/name`, unique in a policy.
    public let id: String
    /// The category (from `@category`, or the file name without extension).
    public let category: String
    /// The name given on the rule line.
    public let name: String
    /// What the rule does.
    public let action: RuleAction
    /// The compiled pattern.
    public let pattern: Pattern
    /// The request part the pattern is matched against.
    public let field: RequestField
    /// Methods the rule applies to (upper-case); empty means any.
    public let methods: Set<String>
    /// Higher priorities win; default 0.
    public let priority: Int
    /// The section's `message=`, if any.
    public let message: String?
    /// The section's `tags=`.
    public let tags: [String]
    /// Where the rule line is.
    public let location: SourceLocation

    /// Whether the rule applies to requests with `method` (already upper-cased).
    public func applies(toMethod method: String) -> Bool {
        methods.isEmpty || methods.contains(method)
    }

    /// `category/name (file:line:column)`.
    public var description: String { "\(id) (\(location))" }

    /// Rules are equal when they are the same rule of the same file.
    public static func == (lhs: Rule, rhs: Rule) -> Bool {
        lhs.id == rhs.id && lhs.location == rhs.location
    }
}
