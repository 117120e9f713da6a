import AuditPolicy
import Testing

/// `Policy.decidesBeyondOrigin`: whether a rule could decide a request to an origin on more than the
/// origin, which makes an intercepting proxy terminate that origin's TLS.
@Suite struct OriginDepthTests {
    static func decides(
        _ rules: String, _ origin: String = "https://api.example.org/", host: String = "api.example.org"
    )
        throws -> Bool
    {
        try Policy(parsing: rules, file: "t.rules").decidesBeyondOrigin(origin, host: host)
    }

    @Test("a host-wide block or allow decides on the origin alone")
    func hostWide() throws {
        #expect(try !Self.decides("[block]\nb ^https?://([a-z0-9-]+\\.)*example\\.org(/|$)"))
        #expect(try !Self.decides("[allow]\na ^https://api\\.example\\.org/\n[record]\nr api\\.example"))
        #expect(try !Self.decides("[block] field=host\nb ^api\\.example\\.org$"))
    }

    @Test("a path rule of the origin decides beyond it")
    func pathRule() throws {
        #expect(try Self.decides("[block]\nupload ^https://api\\.example\\.org/upload"))
        #expect(try Self.decides("[block] field=path\nadmin ^/admin"))
        #expect(try Self.decides("[block] field=query\ndebug debug=1"))
        #expect(try Self.decides("[block] field=header:content-type\nform multipart"))
    }

    @Test("a method condition on a host-wide rule decides beyond the origin")
    func methods() throws {
        #expect(try Self.decides("[block] methods=POST,PUT,DELETE\nwrites ^https://api\\.example\\.org/"))
        #expect(try Self.decides("[block] field=method\nwrites ^(POST|PUT)$"))
    }

    @Test("redirect, respond and warn need the request itself, even host-wide")
    func actions() throws {
        #expect(try Self.decides("[warn]\nw ^https://api\\.example\\.org/"))
        #expect(try Self.decides("[respond 204]\nr ^https://api\\.example\\.org/"))
        #expect(try Self.decides("[redirect https://example.net/]\nr ^https://api\\.example\\.org/"))
        #expect(try Self.decides("[warn] field=host\nw example\\.org$"))
    }

    @Test("rules of other origins, and unanchored ones that cannot match it, do not count")
    func otherOrigins() throws {
        #expect(try !Self.decides("[block]\nb ^https://rival\\.net/admin\n[warn]\nw ^https?://shop\\.test/"))
        #expect(try !Self.decides("[warn] field=host\nw ^rival\\.net$"))
        #expect(try Self.decides("[block]\nb /admin"))
    }

    @Test("an origin with a port is its own origin")
    func port() throws {
        let rules = "[block]\nb ^https://api\\.example\\.org:8443/admin"
        #expect(try Self.decides(rules, "https://api.example.org:8443/"))
        #expect(try !Self.decides(rules))
    }
}
