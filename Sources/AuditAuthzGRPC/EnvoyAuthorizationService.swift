import AuditAuthz
import AuditPolicy
import AuditReport
import GRPCCore

/// Envoy's `envoy.service.auth.v3.Authorization/Check` over gRPC, decided by an ``AuditAuthz/AuthzDecider``.
///
/// A check's request is read from `attributes.request.http` (method, scheme, host, path and query,
/// headers, size, id); the answer is an `OkHttpResponse` carrying the verdict headers for the
/// upstream, or a `DeniedHttpResponse` with the status, headers and JSON body the client gets.
public struct EnvoyAuthorizationService: Envoy_Service_Auth_V3_Authorization.SimpleServiceProtocol {
    /// Decides every check.
    public let decider: AuthzDecider

    /// A service whose checks `decider` decides.
    public init(decider: AuthzDecider) { self.decider = decider }

    /// Decides one check.
    public func check(
        request: Envoy_Service_Auth_V3_CheckRequest, context: ServerContext
    ) async throws -> Envoy_Service_Auth_V3_CheckResponse {
        Self.response(decider.decide(Self.check(request)))
    }

    /// The check `request` describes.
    public static func check(_ request: Envoy_Service_Auth_V3_CheckRequest) -> AuthzCheck {
        let http = request.attributes.request.http
        var headers: [AuditRequest.Header] = []
        // Envoy sends `header_map` (raw values) when told to encode raw headers, `headers` otherwise;
        // the pseudo-headers (`:authority`, `:path`, …) are the fields below.
        if http.hasHeaderMap {
            for header in http.headerMap.headers where !header.key.hasPrefix(":") {
                let value = header.rawValue.isEmpty ? header.value : String(decoding: header.rawValue, as: UTF8.self)
                headers.append(AuditRequest.Header(name: header.key, value: value))
            }
        } else {
            for (name, value) in http.headers.sorted(by: { $0.key < $1.key }) where !name.hasPrefix(":") {
                headers.append(AuditRequest.Header(name: name, value: value))
            }
        }
        if !headers.contains(where: { $0.name.lowercased() == "host" }), !http.host.isEmpty {
            headers.insert(AuditRequest.Header(name: "Host", value: http.host), at: 0)
        }
        // `path` holds the query too; `query` repeats it without the '?'.
        var target = http.path
        if !http.query.isEmpty, !target.contains("?") { target += "?" + http.query }
        return AuthzCheck(
            contract: .envoyGRPC, method: http.method, scheme: http.scheme.isEmpty ? "http" : http.scheme.lowercased(),
            authority: http.host, target: target, headers: headers, bodyBytes: http.size >= 0 ? Int(http.size) : nil,
            requestID: http.id.isEmpty ? nil : http.id)
    }

    /// The `CheckResponse` that gives `answer` to Envoy.
    public static func response(_ answer: AuthzAnswer) -> Envoy_Service_Auth_V3_CheckResponse {
        var response = Envoy_Service_Auth_V3_CheckResponse()
        if answer.isAllowed {
            response.status.code = 0  // OK
            var ok = Envoy_Service_Auth_V3_OkHttpResponse()
            ok.headers = answer.headers.map { option($0, action: .overwriteIfExistsOrAdd) }
            ok.headersToRemove = answer.headersToRemove
            response.okResponse = ok
        } else {
            // PERMISSION_DENIED for a decision; UNAVAILABLE when the check was shed.
            response.status.code = answer.status == 503 ? 14 : 7
            var denied = Envoy_Service_Auth_V3_DeniedHttpResponse()
            denied.status.code = Envoy_Type_V3_StatusCode(rawValue: answer.status) ?? .forbidden
            // Envoy frames the body it sends itself.
            denied.headers = answer.headers.filter { $0.name.lowercased() != "content-length" }
                .map { option($0, action: .overwriteIfExistsOrAdd) }
            denied.body = String(decoding: answer.body, as: UTF8.self)
            response.deniedResponse = denied
        }
        return response
    }

    private static func option(
        _ header: RequestSnapshot.Header, action: Envoy_Config_Core_V3_HeaderValueOption.HeaderAppendAction
    ) -> Envoy_Config_Core_V3_HeaderValueOption {
        var option = Envoy_Config_Core_V3_HeaderValueOption()
        option.header.key = header.name.lowercased()
        option.header.value = header.value
        option.appendAction = action
        return option
    }
}
