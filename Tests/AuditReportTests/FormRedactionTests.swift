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

/// `Redaction.redact(multipartBody:boundary:)`: a multipart form's secret fields hidden in its bytes.
@Suite struct MultipartRedactionTests {
    let redaction = Redaction.default

    static func body(_ parts: [(disposition: String, value: [UInt8])], boundary: String = "XyZ") -> [UInt8] {
        var body: [UInt8] = Array("preamble\r\n".utf8)
        for part in parts {
            body += Array("--\(boundary)\r\nContent-Disposition: form-data; \(part.disposition)\r\n\r\n".utf8)
            body += part.value + [0x0D, 0x0A]
        }
        return body + Array("--\(boundary)--\r\n".utf8)
    }

    @Test("a multipart form's secret fields are hidden; its other fields and its files, any bytes, as sent")
    func secretFields() {
        let file: [UInt8] = [0x00, 0xFF, 0x0D, 0x0A] + Array("password=in-a-file".utf8)
        let sent = Self.body([
            ("name=\"user\"", Array("ann".utf8)), ("name=\"Password\"", Array("hunter2".utf8)),
            ("name=\"upload\"; filename=\"a.bin\"", file), ("name=api_key", Array("k-1".utf8)),
        ])
        let expected = Self.body([
            ("name=\"user\"", Array("ann".utf8)),
            ("name=\"Password\"", Array("REDACTED-\(redaction.fingerprint("hunter2"))".utf8)),
            ("name=\"upload\"; filename=\"a.bin\"", file),
            ("name=api_key", Array("REDACTED-\(redaction.fingerprint("k-1"))".utf8)),
        ])
        #expect(redaction.redact(multipartBody: sent, boundary: "XyZ") == expected)
    }

    @Test("a multipart body without secret fields, or read with another boundary, comes back as it is")
    func unchanged() {
        let sent = Self.body([("name=\"password\"", Array("hunter2".utf8))])
        #expect(redaction.redact(multipartBody: sent, boundary: "other") == sent)
        let plain = Self.body([("name=\"q\"", Array("swift".utf8))])
        #expect(redaction.redact(multipartBody: plain, boundary: "XyZ") == plain)
    }

    @Test(
        "the boundary a content type names, quoted or not",
        arguments: [
            ("multipart/form-data; boundary=----WebKitFormBoundary7MA4", "----WebKitFormBoundary7MA4"),
            ("multipart/form-data; charset=utf-8; BOUNDARY=\"a b\"", "a b"),
        ])
    func boundary(_ type: String, boundary: String) {
        #expect(Redaction.multipartBoundary(of: type) == boundary)
    }

    @Test("a content type without a boundary names none")
    func noBoundary() {
        #expect(Redaction.multipartBoundary(of: "multipart/form-data") == nil)
    }
}
