/// Why a policy could not be loaded or a policy test did not hold.
public enum PolicyError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The policy has errors; all of them, sorted by location. Nothing was loaded.
    case invalidPolicy([Diagnostic])
    /// The directory holds no `.rules` file.
    case noRuleFiles(directory: String)
    /// A file or directory could not be read.
    case cannotRead(path: String, reason: String)
    /// A policy test case could not be read (bad syntax or an unknown rule).
    case invalidTestCase(Diagnostic)
    /// A policy test case ran and did not hold.
    case testCaseFailed(PolicyTestResult)

    /// The diagnostics or failure, compiler-style, one per line.
    public var description: String {
        switch self {
        case .invalidPolicy(let diagnostics):
            diagnostics.map(\.description).joined(separator: "\n")
        case .noRuleFiles(let directory):
            "\(directory): error: no .rules files found"
        case .cannotRead(let path, let reason):
            "\(path): error: \(reason)"
        case .invalidTestCase(let diagnostic):
            diagnostic.description
        case .testCaseFailed(let result):
            result.description
        }
    }

    /// The error as one line per problem.
    public var lines: [String] { description.split(separator: "\n").map(String.init) }
}
