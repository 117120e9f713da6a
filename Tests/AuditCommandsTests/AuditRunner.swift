import AuditCommands
import Foundation
import Testing

/// What one run of `audit` printed and returned.
struct AuditRun: Equatable {
    var standardOutput: String
    var standardError: String
    var exitCode: Int32

    var outputLines: [String] {
        standardOutput.split(separator: "\n", omittingEmptySubsequences: false).map(String.init).dropLast(
            standardOutput.hasSuffix("\n") ? 1 : 0)
    }
}

/// The repository root, where the bundled `policies/` folder is.
let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

/// Runs `audit` in this process with `arguments`, capturing its output.
func runInProcess(_ arguments: [String]) -> AuditRun {
    let capture = CapturedOutput()
    let code: Int32 = CommandOutput.$current.withValue(capture.output) {
        do {
            var command = try AuditCommand.parseAsRoot(AuditCommand.normalizedArguments(arguments))
            try command.run()
            return 0
        } catch {
            let message = AuditCommand.fullMessage(for: error)
            if !message.isEmpty { capture.output.writeErrorLine(message) }
            return AuditCommand.exitCode(for: error).rawValue
        }
    }
    return AuditRun(standardOutput: capture.standardOutput, standardError: capture.standardError, exitCode: code)
}

/// Runs the built `audit` executable with `arguments` in `directory`, feeding `input` on standard input,
/// with this process's environment changed by `environment` (a nil value removes a variable).
func runBinary(
    _ arguments: [String], in directory: URL = repositoryRoot, input: String = "",
    environment: [String: String?] = [:]
) throws -> AuditRun {
    try runProgram(try auditExecutable(), arguments, in: directory, input: input, environment: environment)
}

/// Runs `executable` with `arguments` in `directory`, feeding `input` on standard input, with this
/// process's environment changed by `environment` (a nil value removes a variable).
func runProgram(
    _ executable: URL, _ arguments: [String], in directory: URL = repositoryRoot, input: String = "",
    environment: [String: String?] = [:]
) throws -> AuditRun {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    process.currentDirectoryURL = directory
    if !environment.isEmpty {
        var variables = ProcessInfo.processInfo.environment
        for (name, value) in environment { variables[name] = value }
        process.environment = variables
    }
    let stdin = Pipe()
    let stdout = Pipe()
    let stderr = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = stderr
    try process.run()
    stdin.fileHandleForWriting.write(Data(input.utf8))
    try stdin.fileHandleForWriting.close()
    let out = stdout.fileHandleForReading.readDataToEndOfFile()
    let err = stderr.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return AuditRun(
        standardOutput: String(decoding: out, as: UTF8.self), standardError: String(decoding: err, as: UTF8.self),
        exitCode: process.terminationStatus
    )
}

/// Runs curl with `arguments`, ignoring the proxy variables of the environment: what it printed on
/// standard output, and its exit status.
func runCurl(_ arguments: [String]) throws -> (output: Data, status: Int32) {
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["curl"] + arguments
    process.environment = ProcessInfo.processInfo.environment.filter { !$0.key.lowercased().hasSuffix("_proxy") }
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    try process.run()
    let data = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (data, process.terminationStatus)
}

/// The `audit` binary built beside the test bundle.
func auditExecutable() throws -> URL {
    let candidates = [
        Bundle.main.bundleURL, URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent(),
    ]
    for directory in candidates {
        for folder in [directory, directory.deletingLastPathComponent()] {
            let url = folder.appendingPathComponent("audit")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
    }
    throw CocoaError(.fileNoSuchFile, userInfo: [NSFilePathErrorKey: "audit executable near \(candidates)"])
}

/// A folder of files, removed when the value goes away.
final class TemporaryFolder {
    let url: URL

    init(_ files: [String: String]) throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("ra-cli-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        for (name, text) in files { try Data(text.utf8).write(to: url.appendingPathComponent(name)) }
    }

    var path: String { url.path }

    deinit { try? FileManager.default.removeItem(at: url) }
}
