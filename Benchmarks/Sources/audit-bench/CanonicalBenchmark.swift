import ArgumentParser
import Foundation
import RequestAudit

/// What canonicalizing costs a URL: the full parse (`CanonicalURL`), what a decision pays
/// (`normalizedURL`: a check that keeps an already canonical URL as it is, the parse otherwise), and
/// both over URLs that are already canonical; each against copying the URL's bytes once, measured
/// in the same run, passes alternated.
struct Canonicalization: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "canonical", abstract: "ns/URL to canonicalize the benchmark URLs, against copying their bytes.")
    @OptionGroup var options: DataOptions
    @Option(help: "Passes of each measurement (median reported).") var passes = 7

    func run() throws {
        let requests = try BenchData(directory: options.data).requests(count: options.urls)
        let urls = requests.map(\.url)
        var invalid = 0
        var canonicalForms: [AuditRequest] = []
        for request in requests {
            switch request.canonicalURL {
            case .success(let url): canonicalForms.append(AuditRequest(url: url.string))
            case .failure: invalid += 1
            }
        }
        let alreadyCanonical = requests.count { $0.normalizedURL == $0.url }
        var copy: [Double] = []
        var parse: [Double] = []
        var decisionForm: [Double] = []
        var copyCanonical: [Double] = []
        var decisionFormCanonical: [Double] = []
        var checkCanonical: [Double] = []
        var sink = 0
        func timed(_ body: () -> Void, count: Int) -> Double {
            let start = now()
            body()
            return Double(now() - start) / Double(count)
        }
        for _ in 0..<passes {
            copy.append(timed({ for url in urls { sink &+= Array(url.utf8).count } }, count: urls.count))
            parse.append(
                timed(
                    { for url in urls { sink &+= (try? CanonicalURL(url))?.host.utf8.count ?? 0 } }, count: urls.count))
            decisionForm.append(
                timed({ for request in requests { sink &+= request.normalizedURL.utf8.count } }, count: requests.count))
            copyCanonical.append(
                timed(
                    { for request in canonicalForms { sink &+= Array(request.url.utf8).count } },
                    count: canonicalForms.count))
            checkCanonical.append(
                timed(
                    { for request in canonicalForms where CanonicalURL.isCanonical(request.url) { sink &+= 1 } },
                    count: canonicalForms.count))
            decisionFormCanonical.append(
                timed(
                    { for request in canonicalForms { sink &+= request.normalizedURL.utf8.count } },
                    count: canonicalForms.count))
        }
        print("sink \(sink)", to: &standardError)
        let share = Double(alreadyCanonical) / Double(requests.count) * 100
        print(
            """
            \(requests.count) URLs: \(alreadyCanonical) (\(String(format: "%.1f", share)) %) already canonical, \(invalid) invalid
            | ns/URL (median of \(passes)) | all URLs | their canonical forms |
            |---|---:|---:|
            | copy the URL's bytes (baseline) | \(formatNanoseconds(median(copy))) | \(formatNanoseconds(median(copyCanonical))) |
            | `CanonicalURL` (full parse) | \(formatNanoseconds(median(parse))) | — |
            | `CanonicalURL.isCanonical` (the check alone) | — | \(formatNanoseconds(median(checkCanonical))) |
            | `normalizedURL` (what a decision pays) | \(formatNanoseconds(median(decisionForm))) | \(formatNanoseconds(median(decisionFormCanonical))) |
            | ratio to the copy | \(String(format: "%.2f×", median(decisionForm) / median(copy))) | \(String(format: "%.2f×", median(decisionFormCanonical) / median(copyCanonical))) |
            """)
    }
}
