import AuditAuthz
import AuditPolicy
import NIOCore
import NIOHTTP1
import Testing

/// How the HTTP listener reads each gateway's check.
@Suite struct HTTPContractsTests {
    private func head(_ uri: String, _ headers: [(String, String)], method: HTTPMethod = .GET) -> HTTPRequestHead {
        HTTPRequestHead(version: .http1_1, method: method, uri: uri, headers: HTTPHeaders(headers))
    }

    @Test("nginx auth_request: method, URI, scheme and host from its X-Original and X-Forwarded headers")
    func nginx() {
        let check = HTTPContracts().check(
            head(
                "/_audit",
                [
                    ("Host", "127.0.0.1:9191"), ("X-Original-URI", "/a/b?c=1"), ("X-Original-Method", "DELETE"),
                    ("X-Forwarded-Proto", "https"), ("X-Forwarded-Host", "shop.test"), ("X-Request-ID", "r-1"),
                    ("User-Agent", "curl/8"), ("Connection", "close"),
                ]))
        #expect(check.contract == .nginx)
        #expect(check.method == "DELETE")
        #expect(check.url == "https://shop.test/a/b?c=1")
        #expect(check.requestID == "r-1")
        #expect(check.problem == nil)
        #expect(
            check.headers == [
                .init(name: "Host", value: "shop.test"), .init(name: "X-Request-ID", value: "r-1"),
                .init(name: "User-Agent", value: "curl/8"),
            ])
    }

    @Test("Caddy and Traefik forward auth: X-Forwarded-Method, -Proto, -Host and -Uri")
    func forwardAuth() {
        let check = HTTPContracts().check(
            head(
                "/forward-auth",
                [
                    ("Host", "authz:9191"), ("X-Forwarded-Method", "PUT"), ("X-Forwarded-Uri", "/x?y=2"),
                    ("X-Forwarded-Proto", "http"), ("X-Forwarded-Host", "api.test:8443"),
                    ("X-Forwarded-For", "10.0.0.1"),
                ]))
        #expect(check.contract == .forwardAuth)
        #expect(check.method == "PUT")
        #expect(check.url == "http://api.test:8443/x?y=2")
        #expect(check.headers.first == .init(name: "Host", value: "api.test:8443"))
        #expect(check.headers.contains(.init(name: "X-Forwarded-For", value: "10.0.0.1")))
    }

    @Test(
        "Traefik's X-Forwarded-Proto of a WebSocket upgrade (ws, wss) names the http or https request that asks for it",
        arguments: [
            ("ws", "http://chat.test/socket"), ("wss", "https://chat.test/socket"), ("WSS", "https://chat.test/socket"),
        ])
    func webSocketProto(proto: String, url: String) {
        let check = HTTPContracts().check(
            head(
                "/forward-auth",
                [
                    ("X-Forwarded-Method", "GET"), ("X-Forwarded-Uri", "/socket"), ("X-Forwarded-Proto", proto),
                    ("X-Forwarded-Host", "chat.test"), ("Upgrade", "websocket"),
                ]))
        #expect(check.problem == nil)
        #expect(check.url == url)
    }

    @Test("Envoy's HTTP service: the original method and path, less the path prefix, and the original Host")
    func envoy() {
        let contracts = HTTPContracts(selection: .envoy, pathPrefix: "/authz")
        let check = contracts.check(
            head(
                "/authz/upload?x=1", [("Host", "files.test"), ("Content-Length", "42"), ("x-request-id", "e-9")],
                method: .POST))
        #expect(check.contract == .envoyHTTP)
        #expect(check.method == "POST")
        #expect(check.url == "http://files.test/upload?x=1")
        #expect(check.bodyBytes == 42)
        #expect(check.requestID == "e-9")
    }

    @Test("Envoy's HTTP service: a path outside the prefix is a malformed check")
    func envoyOutsidePrefix() {
        let check = HTTPContracts(selection: .envoy, pathPrefix: "/authz").check(head("/other", [("Host", "a.test")]))
        #expect(check.problem == "the check's path '/other' does not start with the path prefix '/authz'")
    }

    @Test(
        "a check missing its contract's fields names what is missing",
        arguments: [
            (
                [("X-Original-URI", "/a"), ("X-Forwarded-Host", "a.test")],
                "it has no X-Original-Method header (nginx: proxy_set_header X-Original-Method $request_method)"
            ),
            ([("X-Forwarded-Method", "GET"), ("X-Forwarded-Uri", "/a")], "it has no X-Forwarded-Host header"),
            ([("X-Forwarded-Uri", "/a"), ("X-Forwarded-Host", "a.test")], "it has no X-Forwarded-Method header"),
            (
                [("X-Original-URI", "a"), ("X-Original-Method", "GET"), ("X-Forwarded-Host", "a.test")],
                "the request target 'a' is not a path (it must start with '/')"
            ),
            (
                [
                    ("X-Forwarded-Method", "GET"), ("X-Forwarded-Uri", "/"), ("X-Forwarded-Host", "a.test"),
                    ("X-Forwarded-Proto", "ftp"),
                ],
                "the scheme 'ftp' is neither http nor https"
            ),
        ])
    func malformed(headers: [(String, String)], problem: String) {
        #expect(HTTPContracts().check(head("/", headers)).problem == problem)
    }

    @Test(
        "an nginx check whose Host names the listener it came to, without X-Forwarded-Host, is refused",
        arguments: ["127.0.0.1:9191", "localhost:9191", "LOCALHOST:9191"])
    func nginxHostIsTheListener(host: String) throws {
        let check = HTTPContracts().check(
            head("/_audit", [("X-Original-URI", "/a"), ("X-Original-Method", "GET"), ("Host", host)]),
            receivedAt: try SocketAddress(ipAddress: "127.0.0.1", port: 9191))
        #expect(check.problem?.contains("proxy_set_header X-Forwarded-Host $host") == true)
    }

    @Test(
        "an nginx check whose Host names another host or port, or that has X-Forwarded-Host, is decided",
        arguments: [
            [("Host", "shop.test")], [("Host", "127.0.0.1:9192")], [("Host", "10.0.0.1:9191")],
            [("Host", "127.0.0.1:9191"), ("X-Forwarded-Host", "shop.test")],
        ])
    func nginxHostIsNotTheListener(headers: [(String, String)]) throws {
        let check = HTTPContracts().check(
            head("/_audit", [("X-Original-URI", "/a"), ("X-Original-Method", "GET")] + headers),
            receivedAt: try SocketAddress(ipAddress: "127.0.0.1", port: 9191))
        #expect(check.problem == nil)
    }

    @Test("an nginx check without X-Original-URI names the header and the line that sends it")
    func nginxWithoutURI() {
        let check = HTTPContracts(selection: .nginx).check(
            head("/_audit", [("X-Original-Method", "GET"), ("X-Forwarded-Host", "a.test")]))
        #expect(
            check.problem
                == "it has no X-Original-URI or X-Original-URL header (nginx: proxy_set_header X-Original-URI $request_uri)"
        )
    }

    @Test(
        "an nginx check naming the request by X-Original-URL (ingress-nginx, Authelia): its scheme, host and target, not the check's own Host"
    )
    func nginxOriginalURL() throws {
        let check = HTTPContracts().check(
            head(
                "/_audit",
                [
                    ("Host", "127.0.0.1:9191"), ("X-Original-URL", "HTTPS://Shop.test:8443/a/b?c=1"),
                    ("X-Original-Method", "POST"), ("X-Sent-From", "nginx-ingress-controller"),
                ]),
            receivedAt: try SocketAddress(ipAddress: "127.0.0.1", port: 9191))
        #expect(check.contract == .nginx)
        #expect(check.problem == nil)
        #expect(check.method == "POST")
        #expect(check.url == "https://Shop.test:8443/a/b?c=1")
        #expect(
            check.headers == [
                .init(name: "Host", value: "Shop.test:8443"),
                .init(name: "X-Sent-From", value: "nginx-ingress-controller"),
            ])
    }

    @Test(
        "a request sent in absolute form is decided for its path, when it names the check's host",
        arguments: [
            [
                ("X-Original-URI", "http://shop.test/admin?x=1"), ("X-Original-Method", "GET"),
                ("X-Forwarded-Host", "shop.test"),
            ],
            [
                ("X-Forwarded-Uri", "http://SHOP.test/admin?x=1"), ("X-Forwarded-Method", "GET"),
                ("X-Forwarded-Host", "shop.test"),
            ],
        ])
    func absoluteFormTarget(headers: [(String, String)]) {
        let check = HTTPContracts().check(head("/", headers))
        #expect(check.problem == nil)
        #expect(check.url == "http://shop.test/admin?x=1")
    }

    @Test("a request sent in absolute form for another host than the check names is a malformed check")
    func absoluteFormOtherHost() {
        let check = HTTPContracts().check(
            head(
                "/",
                [
                    ("X-Forwarded-Uri", "http://other.test/admin"), ("X-Forwarded-Method", "GET"),
                    ("X-Forwarded-Host", "shop.test"),
                ]))
        #expect(
            check.problem
                == "its request target (http://other.test/admin) names another host than its X-Forwarded-Host (shop.test)"
        )
    }

    @Test(
        "an X-Original-URL without a path or with only a query is read with the path '/'",
        arguments: [("https://shop.test", "https://shop.test/"), ("http://shop.test?q=1", "http://shop.test/?q=1")])
    func nginxOriginalURLWithoutPath(originalURL: String, url: String) {
        let check = HTTPContracts().check(
            head("/", [("X-Original-URL", originalURL), ("X-Original-Method", "GET")]))
        #expect(check.problem == nil)
        #expect(check.url == url)
    }

    @Test(
        "an X-Original-URL that other headers contradict is a malformed check: the gateway and the policy could read different requests",
        arguments: [
            (
                ("X-Original-URI", "/public"),
                "its X-Original-URL (https://shop.test/admin) and X-Original-URI (/public) differ"
            ),
            (
                ("X-Forwarded-Host", "other.test"),
                "its X-Original-URL (https://shop.test/admin) and X-Forwarded-Host (other.test) differ"
            ),
            (
                ("X-Forwarded-Proto", "http"),
                "its X-Original-URL (https://shop.test/admin) and X-Forwarded-Proto (http) differ"
            ),
        ])
    func nginxOriginalURLContradicted(header: (String, String), problem: String) {
        let check = HTTPContracts().check(
            head("/", [("X-Original-URL", "https://shop.test/admin"), ("X-Original-Method", "GET"), header]))
        #expect(check.problem == problem)
    }

    @Test(
        "an X-Original-URL that agrees with X-Original-URI, X-Forwarded-Host and X-Forwarded-Proto is decided",
        arguments: [
            [("X-Original-URI", "/admin")], [("X-Forwarded-Host", "SHOP.test"), ("X-Forwarded-Proto", "HTTPS")],
        ])
    func nginxOriginalURLAgreed(headers: [(String, String)]) {
        let check = HTTPContracts().check(
            head("/", [("X-Original-URL", "https://shop.test/admin"), ("X-Original-Method", "GET")] + headers))
        #expect(check.problem == nil)
        #expect(check.url == "https://shop.test/admin")
    }

    @Test(
        "an X-Original-URL that is not an absolute http or https URL is a malformed check",
        arguments: ["shop.test/admin", "/admin", "ftp://shop.test/admin", "https:///admin", "https://shop.test#top"])
    func nginxOriginalURLMalformed(originalURL: String) {
        let check = HTTPContracts().check(
            head("/", [("X-Original-URL", originalURL), ("X-Original-Method", "GET"), ("Host", "shop.test")]))
        #expect(check.problem == "its X-Original-URL '\(originalURL)' is not an absolute http or https URL")
    }

    @Test(
        "a check with part of the nginx or forward-auth headers is refused for what it lacks, not decided as Envoy's for its own path",
        arguments: [
            (
                [("X-Original-Method", "GET"), ("Host", "shop.test")],
                "it has no X-Original-URI or X-Original-URL header (nginx: proxy_set_header X-Original-URI $request_uri)"
            ),
            ([("X-Forwarded-Method", "GET"), ("X-Forwarded-Host", "shop.test")], "it has no X-Forwarded-Uri header"),
        ])
    func partialRecipe(headers: [(String, String)], problem: String) {
        #expect(HTTPContracts().check(head("/", headers)).problem == problem)
    }

    @Test("a check naming two hosts is malformed: the gateway and the policy could read different ones")
    func twoHosts() {
        let check = HTTPContracts().check(
            head(
                "/",
                [
                    ("X-Forwarded-Method", "GET"), ("X-Forwarded-Uri", "/"), ("X-Forwarded-Host", "a.test"),
                    ("X-Forwarded-Host", "b.test"),
                ]))
        #expect(check.problem?.hasPrefix("the check names more than one host") == true)
    }
}
