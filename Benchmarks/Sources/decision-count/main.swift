// Decides URLs with one rule set, in a function of its own, so that callgrind can count the
// instructions of the decisions alone (`make count`): a count does not drift with a shared
// machine's speed the way time does.
//
//     decision-count RULES-FILE URLS-FILE [COUNT]
//
// Loads every line of RULES-FILE as a pattern of one block policy (as `audit-bench decisions`
// does), decides the first COUNT URLs (default 4,000) once to warm up, then again inside
// `countedDecisions(_:with:)`, and prints the number of URLs and the time a decision took.
import Foundation
import RequestAudit

/// Every request decided once, as a caller's loop over an array of requests makes them.
@inline(never)
func decisions(_ requests: [AuditRequest], with policy: Policy) -> Int {
    var blocked = 0
    for request in requests where policy.evaluate(request).action != .pass { blocked += 1 }
    return blocked
}

/// The decisions callgrind counts (`--toggle-collect='*countedDecisions*'`): the warm-up, whose
/// first matches JIT-compile their patterns, calls ``decisions(_:with:)`` directly.
@inline(never)
func countedDecisions(_ requests: [AuditRequest], with policy: Policy) -> Int {
    decisions(requests, with: policy)
}

let arguments = CommandLine.arguments
guard arguments.count == 3 || arguments.count == 4, let count = Int(arguments.count == 4 ? arguments[3] : "4000")
else {
    FileHandle.standardError.write(Data("usage: decision-count RULES-FILE URLS-FILE [COUNT]\n".utf8))
    exit(2)
}
do {
    let patterns = try String(contentsOfFile: arguments[1], encoding: .utf8).split(separator: "\n")
    var text = "@category bench\n[block]\n"
    for (number, pattern) in patterns.enumerated() { text += "r\(number + 1) \(pattern)\n" }
    let policy = try Policy(sources: [PolicySource(file: arguments[1], text: text)])
    let urls = try String(contentsOfFile: arguments[2], encoding: .utf8).split(separator: "\n").prefix(count)
    let requests = urls.map { AuditRequest(method: "GET", url: String($0)) }
    let warm = decisions(requests, with: policy)
    let start = DispatchTime.now().uptimeNanoseconds
    let blocked = countedDecisions(requests, with: policy)
    let elapsed = DispatchTime.now().uptimeNanoseconds - start
    precondition(warm == blocked, "the same decisions twice")
    print("\(requests.count) URLs, \(blocked) blocked, \(elapsed / UInt64(max(1, requests.count))) ns a decision")
} catch {
    FileHandle.standardError.write(Data("decision-count: \(error)\n".utf8))
    exit(1)
}
