import AuditRegex
import Testing

/// `Pattern.prefixMatch`: what a pattern does with every subject that begins with a prefix, which
/// an intercepting proxy asks of each rule for a tunnel's origin.
@Suite struct PrefixMatchTests {
    static let origin = "https://api.example.org/"

    @Test(
        "the answer for an origin",
        arguments: [
            // Decided within the origin: every URL of it matches.
            (#"^https?://api\.example\.org/"#, Pattern.PrefixMatch.every),
            (#"^https?://([a-z0-9-]+\.)*example\.org(/|$)"#, .every),
            (#"example\.org"#, .every),
            // Depends on the path.
            (#"^https://api\.example\.org/v1/"#, .some),
            (#"^https://api\.example\.org/$"#, .some),
            (#"^https://api\.example\.org/\b"#, .some),
            // Unanchored: may match inside the path of any origin.
            (#"/admin"#, .some),
            (#"upload"#, .some),
            // Anchored to another origin.
            (#"^https?://rival\.net/"#, .none),
            (#"^https://api\.example\.org\.evil/"#, .none),
            (#"^http://api\.example\.org/"#, .none),
        ])
    func answer(pattern: String, expected: Pattern.PrefixMatch) throws {
        #expect(try Pattern(pattern, caseInsensitive: true).prefixMatch(Self.origin) == expected)
    }

    /// A differential check of soundness: wherever the answer is `every` or `none`, each URL of the
    /// origin matches, or does not, as the answer says.
    @Test("every and none hold for the URLs of the origin")
    func soundness() throws {
        let patterns = [
            #"^https?://api\.example\.org/"#, #"^https://api\.example\.org/$"#, #"^https?://rival\.net/"#,
            #"example\.org/v"#, #"^https://api\.example\.org/(?!v2)"#, #"^https://api\.example\.org(?=/)"#,
            #"^https://[^/]+/x"#, #"(?<=org/)a"#,
        ]
        let paths = ["", "a", "v1/items", "v2", "x", "admin?x=1", "%2F", "\u{e9}"]
        for source in patterns {
            let pattern = try Pattern(source, caseInsensitive: true)
            let answer = try pattern.prefixMatch(Self.origin)
            for path in paths where answer != .some {
                let matches = try pattern.matches(Self.origin + path)
                #expect(matches == (answer == .every), "\(source) on \(Self.origin + path): \(answer)")
            }
        }
    }
}
