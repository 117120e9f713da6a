import AuditReport
import Testing

/// `Redaction.redact(formBody:)`: a form body's secrets hidden as a URL query's are.
@Suite struct FormRedactionTests {
    let redaction = Redaction.default

    @Test("a login form's password is hidden, every other byte as sent")
    func login() {
        let body = "user=ann%40example.org&password=hunter2&remember=on"
        #expect(
            redaction.redact(formBody: body)
                == "user=ann%40example.org&password=REDACTED-\(redaction.fingerprint("hunter2"))&remember=on")
    }

    @Test("a token exchange's code and client secret are hidden")
    func tokenExchange() {
        let body = "grant_type=authorization_code&code=SplxlOBeZQQYbYS6WxSbIA&client_id=app&client_secret=s3cr3t"
        #expect(
            redaction.redact(formBody: body)
                == "grant_type=authorization_code&code=REDACTED-\(redaction.fingerprint("SplxlOBeZQQYbYS6WxSbIA"))"
                + "&client_id=app&client_secret=REDACTED-\(redaction.fingerprint("s3cr3t"))")
    }

    @Test("a form with nothing to hide comes back as it is", arguments: ["q=swift+nio&page=2", "", "a", "=&&="])
    func unchanged(_ body: String) {
        #expect(redaction.redact(formBody: body) == body)
    }
}
