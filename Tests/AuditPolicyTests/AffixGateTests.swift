import Testing

@testable import AuditPolicy

/// The gate of start and end keys never turns away a token that starts (ends) with one of its keys,
/// whatever the key's length and whatever follows it in the token.
@Suite struct AffixGateTests {
    /// What a token may have beside its key: nothing, or one to four letters and digits.
    private static let rests = ["", "s", "9", "x7", "q2z", "able"]

    @Test(
        "a token that starts with a key passes the start gate, for keys of one to five bytes",
        arguments: ["k", "ad", "px9", "trak", "pixel"])
    func tokenStartingWithKey(key: String) {
        var builder = AffixGate.Builder()
        builder.insert(Array(key.utf8))
        let gate = builder.gate
        for token in Self.rests.flatMap({ [key + $0, (key + $0).uppercased()] }) {
            let subject = Array("/\(token)?".utf8)
            let passes = gate.mayMatch(subject.span, 1, subject.count - 1, backwards: false)
            #expect(passes, "\(token)")
        }
    }

    @Test(
        "a token that ends with a key passes the end gate, for keys of one to five bytes",
        arguments: ["k", "ad", "px9", "trak", "pixel"])
    func tokenEndingWithKey(key: String) {
        var builder = AffixGate.Builder()
        builder.insert(Array(key.utf8).reversed())
        let gate = builder.gate
        for token in Self.rests.flatMap({ [$0 + key, ($0 + key).uppercased()] }) {
            let subject = Array(".\(token)/".utf8)
            let passes = gate.mayMatch(subject.span, 1, subject.count - 1, backwards: true)
            #expect(passes, "\(token)")
        }
    }
}
