import Foundation
import Synchronization

/// Where commands write: standard output and error by default, a buffer in tests.
public struct CommandOutput: Sendable {
    let writeOut: @Sendable (String) -> Void
    let writeError: @Sendable (String) -> Void

    /// Output that writes to the given closures (each call is one complete line, newline included).
    public init(out: @escaping @Sendable (String) -> Void, error: @escaping @Sendable (String) -> Void) {
        writeOut = out
        writeError = error
    }

    /// The process's standard output and standard error.
    public static let standard = CommandOutput(
        out: { FileHandle.standardOutput.write(Data($0.utf8)) },
        error: { FileHandle.standardError.write(Data($0.utf8)) }
    )

    /// The output commands write to; tests bind it with `CommandOutput.$current.withValue`.
    @TaskLocal public static var current = CommandOutput.standard

    static func line(_ text: String) { current.writeOut(text + "\n") }
    static func errorLine(_ text: String) { current.writeErrorLine(text) }

    /// Writes `text` and a newline to the error stream.
    public func writeErrorLine(_ text: String) { writeError(text + "\n") }
}

/// Collects what a command writes, for in-process tests.
public final class CapturedOutput: Sendable {
    private let texts = Mutex((out: "", error: ""))

    /// An empty capture.
    public init() {}

    /// An output that appends to this capture.
    public var output: CommandOutput {
        CommandOutput(
            out: { text in self.texts.withLock { $0.out += text } },
            error: { text in self.texts.withLock { $0.error += text } }
        )
    }

    /// Everything written to standard output.
    public var standardOutput: String { texts.withLock { $0.out } }
    /// Everything written to standard error.
    public var standardError: String { texts.withLock { $0.error } }
}
