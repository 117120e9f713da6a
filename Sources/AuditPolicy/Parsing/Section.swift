/// A section header's action and options, applied to every rule line under it.
struct Section: Sendable {
    var action: RuleAction
    var message: String?
    var field: RequestField = .url
    var methods: Set<String> = []
    var priority = 0
    var isCaseInsensitive = true
    var tags: [String] = []
    let location: SourceLocation
    /// Where the redirect target starts, for messages about it.
    var targetLocation: SourceLocation?
    var hasPriorityOption = false

    static let optionNames = [
        "message", "field", "methods", "priority", "case", "tags", "body", "file", "type", "ttl", "offline", "private",
    ]

    /// The options only a `respond` section takes.
    static let responseOptionNames: Set<String> = ["body", "file", "type"]

    /// The options only a `cache` section takes.
    static let cacheOptionNames: Set<String> = ["ttl", "offline", "private"]

    /// The methods whose responses a `cache` section keeps, and the only ones it applies to.
    static let cacheableMethods: Set<String> = ["GET", "HEAD"]

    /// The options written as a bare word, without `=value`.
    static let flagOptionNames: Set<String> = ["offline", "private"]

    /// The first word of a rule's pattern and its option's name, when the word reads as a section
    /// option (`ttl=1h`, `offline`) and more of the pattern follows it: an option written on the
    /// rule's line, where it is part of the pattern, not on the section's header.
    static func option(startingPattern pattern: String) -> (word: Substring, key: String)? {
        guard let space = pattern.firstIndex(where: \.isWhitespace) else { return nil }
        let word = pattern[..<space]
        let key = String(word.prefix { $0 != "=" })
        let isOption = key.count < word.count ? optionNames.contains(key) : flagOptionNames.contains(key)
        return isOption ? (word, key) : nil
    }
}
