import AuditPolicy
import AuditRegex

/// Feeds arbitrary bytes to the rule-file parser and compiler as a `.rules` file. Whatever loads is
/// then evaluated against a few requests, indexed and exhaustively: any difference is a crash.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzRuleFile(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let source = PolicySource(file: "fuzz.rules", bytes: bytes)
    guard let policy = try? Policy(sources: [source], limits: MatchLimits(matchLimit: 20_000, depthLimit: 2_000))
    else { return 0 }
    _ = policy.indexStatistics
    for request in probeRequests {
        let indexed = policy.evaluate(request)
        let exhaustive = policy.evaluateEveryRule(request)
        // A rule the index skips cannot match; the exhaustive loop may still hit a limit on it.
        if exhaustive.errors.isEmpty && indexed != exhaustive {
            fatalError("index changed a verdict for \(request.url): \(indexed) vs \(exhaustive)")
        }
    }
    return 0
}

let probeRequests = [
    AuditRequest(method: "GET", url: "https://www.example.com/ads/banner.gif?id=1&token=x"),
    AuditRequest(method: "POST", url: "http://User:pw@Tracker.Example.NET:8080/a/b/c.js#frag"),
    AuditRequest(method: "GET", url: "https://xn--pypal-4ve.com/\u{212A}it?q=ma\u{17F}k%00"),
    AuditRequest(method: "PUT", url: "wss://[::1]:443/socket", headers: [.init(name: "X-Test", value: "abc DEF 123")]),
    AuditRequest(method: "GET", url: "HTTPS:/Ads.Example.COM:443/10.0.0.1?u=tracker.example.net#ads.example.com"),
    AuditRequest(method: "GET", url: "svn+ssh:///user@10.0.0.1/tracker.example.net:8080/a/"),
]

// SwiftPM links an executable's entry point as `FuzzRuleFiles_main`; hand control to libFuzzer's driver.
@_silgen_name("LLVMFuzzerRunDriver")
func runFuzzerDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>, Int) -> CInt
) -> CInt

/// The harness's entry point: hands the command line to libFuzzer's driver with this file's
/// fuzz target.
@_cdecl("FuzzRuleFiles_main")
public func fuzzerMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
    var count = argc
    var arguments: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = argv
    return runFuzzerDriver(&count, &arguments, fuzzRuleFile)
}
