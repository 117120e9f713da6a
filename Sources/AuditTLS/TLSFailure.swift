import NIOSSL

/// What a TLS error means to a user, in one line.
public enum TLSFailure {
    /// Why the handshake with the server at `authority` failed, for a 502's body and the record.
    public static func upstream(_ error: any Error, authority: String) -> String {
        if let error = error as? NIOSSLExtraError, error == .failedToValidateHostname {
            return "the certificate of \(authority) is for another host"
        }
        let text = "\(error)"
        if isVerificationFailure(error) { return unverified(authority: authority) }
        if let error = error as? NIOSSLError, case .handshakeFailed = error {
            return "the TLS handshake with \(authority) failed: \(text)"
        }
        return "the TLS connection to \(authority) failed: \(text)"
    }

    /// Whether `error` is a server's certificate failing verification (its chain, or its dates):
    /// ``CertificateDiagnosis`` can name why.
    public static func isVerificationFailure(_ error: any Error) -> Bool {
        "\(error)".contains("CERTIFICATE_VERIFY_FAILED")
    }

    /// The reason of a verification failure nothing more is known about.
    static func unverified(authority: String) -> String {
        "the certificate of \(authority) failed verification (an untrusted issuer, expired or not yet valid; "
            + "--upstream-ca FILE adds a root)"
    }

    /// Whether `error` is a client's TLS handshake failing with the proxy (its certificate refused,
    /// no common protocol, or not TLS at all).
    public static func isHandshakeFailure(_ error: any Error) -> Bool {
        if let error = error as? NIOSSLError, case .handshakeFailed = error { return true }
        return false
    }

    /// Why a client's handshake with the proxy for `host` failed, with what to do about it.
    ///
    /// A client that refuses the proxy's certificate says so in an alert (`UNKNOWN_CA`,
    /// `BAD_CERTIFICATE`…). An OpenSSL client (curl, Python, Node, git) sends that TLS 1.3 alert
    /// unencrypted, before it has keys for the handshake's end, so the proxy reads a record it
    /// cannot decrypt (`DECRYPTION_FAILED_OR_BAD_RECORD_MAC`): the same refusal.
    public static func client(_ error: any Error, host: String) -> String {
        let text = shortCodes(error)
        let hint = "'audit env --ca-dir DIR' prints the settings that make tools trust it"
        let refusals = ["UNKNOWN_CA", "BAD_CERTIFICATE", "CERTIFICATE_UNKNOWN", "DECRYPT_ERROR"]
        let isAlert = refusals.contains(where: text.contains)
        if isAlert || text.contains("DECRYPTION_FAILED_OR_BAD_RECORD_MAC") {
            let how = isAlert ? "" : " (its alert came unencrypted, as OpenSSL clients send it)"
            return "the client refused the proxy's certificate for \(host)\(how): it does not trust the audit CA; "
                + hint
        }
        return "the client ended the TLS handshake for \(host) (\(text)): most likely it does not trust the audit "
            + "CA; " + hint
    }

    /// BoringSSL's reason codes in `error` (`UNKNOWN_CA, BAD_PACKET_LENGTH`), or its description when it
    /// has none.
    static func shortCodes(_ error: any Error) -> String {
        let text = "\(error)"
        var codes: [String] = []
        var rest = text[...]
        while let range = rest.range(of: "OPENSSL_internal:") {
            let code = rest[range.upperBound...].prefix { $0.isLetter || $0.isNumber || $0 == "_" }
            if !code.isEmpty, !codes.contains(String(code)) { codes.append(String(code)) }
            rest = rest[range.upperBound...]
        }
        return codes.isEmpty ? text : codes.joined(separator: ", ")
    }
}
