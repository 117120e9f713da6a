import AuditPolicy
import Testing

/// The error diagnostics of `text`, or none when it loads.
private func errors(in text: String) -> [Diagnostic] {
    do {
        _ = try Policy(parsing: text, file: "big.rules")
        return []
    } catch PolicyError.invalidPolicy(let diagnostics) {
        return diagnostics.filter(\.isError)
    } catch {
        return []
    }
}

@Suite struct ParallelCompileTests {
    static let badLines = [12, 1_501, 2_999]

    static var bigFile: String {
        "[block]\n"
            + (2...3_000).map { line in
                badLines.contains(line) ? "bad\(line) a(b\n" : "r\(line) ^https://r\(line)\\.test/\n"
            }.joined()
    }

    @Test("a file compiled on every core reports each bad pattern at its own line and column, in order")
    func errorsInOrder() {
        let found = errors(in: Self.bigFile)
        #expect(found.map(\.location.line) == Self.badLines)
        for diagnostic in found {
            // The same line alone in a file gives the column a serial compile gives.
            let alone = errors(in: "[block]\nbad\(diagnostic.location.line) a(b\n")
            #expect(alone.map(\.location.column) == [diagnostic.location.column])
            #expect(alone.map(\.message) == [diagnostic.message])
        }
    }

    @Test("a file compiled on every core keeps its rules in file order")
    func rulesInOrder() throws {
        let good = Self.bigFile.split(separator: "\n").filter { !$0.hasPrefix("bad") }.joined(separator: "\n")
        let policy = try Policy(parsing: good, file: "big.rules")
        #expect(policy.rules.map(\.name) == (2...3_000).filter { !Self.badLines.contains($0) }.map { "r\($0)" })
        #expect(policy.rules.map(\.location.line) == Array(2...2_997))
        #expect(policy.evaluate(AuditRequest(url: "https://r2000.test/")).rule?.name == "r2000")
    }
}
