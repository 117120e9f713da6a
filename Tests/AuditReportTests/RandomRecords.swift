import AuditPolicy
import Foundation

@testable import AuditReport

/// A small deterministic generator, so a failure names a record that can be made again.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// Strings that exercise JSON escaping and UTF-8: quotes, backslashes, control characters,
/// slashes, accents, CJK, emoji (a surrogate pair in `\u` form) and combining marks.
let awkwardPieces = [
    "plain", "with \"quotes\"", #"back\slash"#, "tab\there", "new\nline", "nul\u{0}byte", "bell\u{7}", "a/b/c",
    "caf\u{E9}", "\u{65E5}\u{672C}", "\u{1F600}", "e\u{301}", "https://x.test/p?q=1&r=%20", "", "\u{7F}\u{80}",
    String((0..<32).map { Character(Unicode.Scalar(UInt8($0))) }), "\u{2028}\u{FEFF}",
]

func awkwardString(_ random: inout SplitMix64) -> String {
    (0..<Int.random(in: 1...3, using: &random)).map { _ in awkwardPieces.randomElement(using: &random) ?? "" }
        .joined()
}

func optional<T>(_ value: T, _ random: inout SplitMix64) -> T? { Bool.random(using: &random) ? value : nil }

func randomRecord(_ random: inout SplitMix64) -> AuditRecord {
    let verdict = Verdict.Action.allCases.randomElement(using: &random) ?? .pass
    let recordedCount = Int.random(in: 0...3, using: &random)
    let shadow = DecisionSummary(
        verdict: Verdict.Action.allCases.randomElement(using: &random) ?? .block,
        rule: optional(awkwardString(&random), &random), redirect: optional(awkwardString(&random), &random),
        recorded: (0..<Int.random(in: 0...2, using: &random)).map { _ in awkwardString(&random) })
    let decision = DecisionSnapshot(
        verdict: verdict, rule: optional(awkwardString(&random), &random),
        category: optional(awkwardString(&random), &random), message: optional(awkwardString(&random), &random),
        redirect: optional(awkwardString(&random), &random),
        recorded: (0..<recordedCount).map { _ in awkwardString(&random) },
        recordedCategories: (0..<recordedCount).map { _ in awkwardString(&random) },
        errors: (0..<Int.random(in: 0...2, using: &random)).map { _ in awkwardString(&random) },
        nanoseconds: UInt64.random(in: 0...UInt64.max, using: &random), shadow: optional(shadow, &random))
    let request = RequestSnapshot(
        method: ["GET", "POST", "PUT"].randomElement(using: &random) ?? "GET", url: awkwardString(&random),
        host: awkwardString(&random),
        headers: (0..<Int.random(in: 0...3, using: &random)).map { _ in
            RequestSnapshot.Header(name: awkwardString(&random), value: awkwardString(&random))
        },
        bodyBytes: optional(Int.random(in: -5...Int.max, using: &random), &random))
    let error = OutcomeSnapshot.ErrorSnapshot(
        domain: awkwardString(&random), code: Int.random(in: Int.min...Int.max, using: &random),
        description: awkwardString(&random))
    let outcome = OutcomeSnapshot(
        kind: [.response, .failure, .blocked, .warningDeclined, .cancelled, .systemLoader, .replayed, .tunnel]
            .randomElement(using: &random) ?? .response,
        status: optional(Int.random(in: 100...599, using: &random), &random),
        bytes: optional(Int.random(in: 0...Int.max, using: &random), &random),
        durationMilliseconds: [0, 0.1, 2.5, 1e-7, 123_456.789, Double.random(in: 0...1e6, using: &random)]
            .randomElement(using: &random) ?? 0,
        forwardedURL: optional(awkwardString(&random), &random), finalURL: optional(awkwardString(&random), &random),
        redirects: (0..<Int.random(in: 0...2, using: &random)).map { _ in awkwardString(&random) },
        error: optional(error, &random), sentBytes: optional(Int.random(in: 0...Int.max, using: &random), &random))
    let warning = WarningResolution(
        decision: Bool.random(using: &random) ? .proceed : .cancel,
        decidedBy: [.handler, .timeout, .default, .acknowledged].randomElement(using: &random) ?? .default)
    // Times from 1970 to 2100, including leap days, at whole milliseconds as the log keeps them.
    let milliseconds = Int64.random(in: 0...4_102_444_800_000, using: &random)
    return AuditRecord(
        id: UUID(), time: Date(timeIntervalSince1970: Double(milliseconds) / 1_000), request: request,
        decision: decision, warning: optional(warning, &random), outcome: outcome)
}
