/// One problem found in a policy or test file, printed compiler-style.
///
/// ```
/// policies/danger.rules:12:7: error: unknown action 'blok' (expected block, redirect, respond, warn, allow, record, cache)
/// ```
public struct Diagnostic: Error, Sendable, Hashable, Comparable, CustomStringConvertible {
    /// How serious a diagnostic is.
    public enum Severity: String, Sendable, Hashable {
        /// The file cannot be loaded as written.
        case error
        /// The file loads, but probably does not mean what its author thinks.
        case warning
    }

    /// Where the problem is.
    public let location: SourceLocation
    /// Error or warning.
    public let severity: Severity
    /// What is wrong, and where possible what was expected.
    public let message: String

    /// Creates a diagnostic.
    public init(_ severity: Severity, at location: SourceLocation, _ message: String) {
        self.location = location
        self.severity = severity
        self.message = message
    }

    /// Whether this diagnostic prevents loading.
    public var isError: Bool { severity == .error }

    /// `file:line:column: severity: message`.
    public var description: String { "\(location): \(severity.rawValue): \(message)" }

    /// Orders by location.
    public static func < (lhs: Diagnostic, rhs: Diagnostic) -> Bool {
        lhs.location < rhs.location
    }
}
