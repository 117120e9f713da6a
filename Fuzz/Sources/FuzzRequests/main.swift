import AuditPolicy
import AuditRegex

/// Feeds arbitrary bytes as a request (method, URL, a header, a `Host` header) to the bundled
/// policies plus a few hostile patterns. Indexed and exhaustive evaluation must agree, a `Host`
/// header let through must name the URL's server when parsed; nothing may crash or hang.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRequest(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let lines = text.split(separator: "\n", maxSplits: 3, omittingEmptySubsequences: false).map(String.init)
    let request: AuditRequest
    switch lines.count {
    case 1: request = AuditRequest(method: "GET", url: lines[0])
    case 2: request = AuditRequest(method: lines[0], url: lines[1])
    case 3: request = AuditRequest(method: lines[0], url: lines[1], headers: [.init(name: "X-Test", value: lines[2])])
    default:
        request = AuditRequest(
            method: lines[0], url: lines[1],
            headers: [.init(name: "X-Test", value: lines[2]), .init(name: "Host", value: lines[3])])
        // The check reads the written authority first: what it lets through must name the server when parsed.
        if request.method != "CONNECT", request.hostHeaderContradiction == nil, let url = try? CanonicalURL(lines[1]),
            !url.isNamed(byHostHeader: lines[3])
        {
            fatalError("Host '\(lines[3])' let through for \(lines[1])")
        }
    }
    let indexed = policy.evaluate(request)
    let exhaustive = policy.evaluateEveryRule(request)
    if exhaustive.errors.isEmpty && indexed != exhaustive {
        fatalError("index changed a verdict for \(request.url): \(indexed) vs \(exhaustive)")
    }
    _ = request.normalizedURL
    _ = request.host
    return 0
}

let policy: Policy = {
    let directory =
        CommandLine.arguments.dropFirst().first { $0.hasPrefix("-policies=") }
        .map { String($0.dropFirst("-policies=".count)) } ?? "policies"
    var sources = (try? PolicySource.files(in: directory, withExtension: "rules")) ?? []
    sources.append(
        PolicySource(
            file: "hostile.rules",
            text: """
                [block]
                nested (a+)+$
                alternation ^https?://([a-z]+|[a-z0-9]+)*\\.example$
                backref (\\w+)\\1\\1
                [record] field=header:x-test
                any .
                [warn] field=host case=sensitive
                kelvin \u{212A}it
                """))
    // Host rules as ad-block converters write them: their tokens are looked up in the authority only.
    let opening = #"^[a-z][a-z0-9+.-]*:/+(?:[^/?#]*\.)?"#
    let ending = "(?:[^a-z0-9_.%-]|$)"
    sources.append(
        PolicySource(
            file: "hosts.rules",
            text: """
                [block]
                host \(opening)ads\\.example\\.com\(ending)
                ip \(opening)10\\.0\\.0\\.1\(ending)
                path \(opening)tracker\\.example\\.net/pixel/
                bare \(opening)cdn
                [record] case=sensitive
                exact \(opening)Example\\.com\(ending)
                [warn] field=header:x-test
                header \(opening)evil\\.example\(ending)
                """))
    // Rules filed by letters inside a token: a policy with a few such keys searches the whole subject.
    sources.append(
        PolicySource(
            file: "infix.rules",
            text: """
                [record]
                ttp ttp
                hex 0x5bf076a8
                [block]
                mixed (?i)q7x
                """))
    do {
        return try Policy(sources: sources, limits: MatchLimits(matchLimit: 20_000, depthLimit: 2_000))
    } catch {
        fatalError("the fuzz policy does not load: \(error)")
    }
}()

// SwiftPM links an executable's entry point as `FuzzRequests_main`; hand control to libFuzzer's driver.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt

/// The harness's entry point: hands the command line to libFuzzer's driver with this file's
/// fuzz target.
@_cdecl("FuzzRequests_main")
public func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    var count = argc
    var arguments: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = argv
    return runFuzzerDriver(&count, &arguments, fuzzRequest)
}
