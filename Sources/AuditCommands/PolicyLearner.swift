import AuditPolicy
import Foundation

/// Proposes a policy, and the test file that pins it, from the requests of recorded traffic.
///
/// - `allowlist`: one allow rule per host seen, collapsed to its registrable domain (subdomains
///   included) when two or more hosts of that domain were seen and the host is a name (not an
///   address); then a block rule for everything else.
/// - `record`: one record rule per host and first path segment seen.
///
/// Every rule is anchored, its host and path escaped, and commented with what it came from. The
/// test file has one case per distinct (method, host, first path segment) seen, using the first URL
/// seen for it, plus one case for the block rule, so `audit lint` is clean and `audit test
/// --coverage` passes on the proposal as written.
struct PolicyLearner {
    enum Mode: String, CaseIterable {
        case allowlist
        case record
    }

    let mode: Mode
    let category: String

    /// Two-label public suffixes common enough to matter: a domain under one is three labels long.
    static let twoLabelSuffixes: Set<String> = [
        "co.uk", "org.uk", "ac.uk", "gov.uk", "com.au", "net.au", "org.au", "co.jp", "ne.jp", "or.jp", "co.nz",
        "com.br", "com.cn", "com.mx", "co.in", "co.za", "com.tr", "github.io", "gitlab.io", "herokuapp.com",
        "appspot.com", "cloudfront.net", "azurewebsites.net", "blogspot.com", "vercel.app", "netlify.app",
    ]

    /// The registrable domain of `host`, or nil for an address or a single-label name.
    static func registrableDomain(_ host: String) -> String? {
        if host.contains(":") || host.allSatisfy({ $0.isNumber || $0 == "." }) { return nil }
        let labels = host.split(separator: ".")
        guard labels.count >= 2 else { return nil }
        let lastTwo = labels.suffix(2).joined(separator: ".")
        if twoLabelSuffixes.contains(lastTwo) {
            return labels.count >= 3 ? labels.suffix(3).joined(separator: ".") : nil
        }
        return lastTwo
    }

    /// `text` with every PCRE2 metacharacter escaped.
    static func escaped(_ text: String) -> String {
        var out = ""
        for character in text {
            if "\\.^$|?*+()[]{}/#".contains(character) { out.append("\\") }
            out.append(character)
        }
        return out
    }

    /// A rule id from `text`: lowercase letters, digits and dashes.
    static func identifier(_ text: String) -> String {
        var id = ""
        for character in text.lowercased() {
            if character.isASCII, character.isLetter || character.isNumber {
                id.append(character)
            } else if !id.hasSuffix("-") {
                id.append("-")
            }
        }
        let trimmed = id.trimmingCharacters(in: CharacterSet(charactersIn: "-"))
        return trimmed.isEmpty ? "root" : trimmed
    }

    /// The first segment of `path` (`/v1/items` → `v1`), or empty.
    static func firstSegment(_ path: String) -> String {
        String(path.split(separator: "/", omittingEmptySubsequences: true).first ?? "")
    }

    struct Proposal {
        let rules: String
        let tests: String
        let ruleCount: Int
        let caseCount: Int
    }

    /// The proposal for `requests`, read from `sources`.
    func propose(_ requests: [AuditRequest], sources: [String]) -> Proposal {
        let usable = requests.filter { !$0.host.isEmpty }
        // Distinct (method, host, first segment), in the order first seen, with their first URL.
        var cases: [(method: String, host: String, segment: String, url: String)] = []
        var seenCases = Set<String>()
        for request in usable {
            let segment = Self.firstSegment(request.path)
            let key = "\(request.method.uppercased()) \(request.host) \(segment)"
            if seenCases.insert(key).inserted {
                cases.append((request.method.uppercased(), request.host, segment, request.url))
            }
        }
        let header = """
            # \(category).rules — proposed by `audit learn --mode \(mode.rawValue)` from \(usable.count) requests in
            # \(sources.joined(separator: ", ")).
            # Review before use: every rule says what it came from.
            @category \(category)

            """
        var rules = header
        var tests = "# expect   rule   [METHOD] URL — one case per (method, host, first path segment) seen\n"
        var ruleCount = 0
        var ruleOfCase: [String: String] = [:]
        switch mode {
        case .allowlist:
            var hostsByDomain: [String: [String]] = [:]
            var order: [String] = []
            for host in usable.map(\.host) {
                let key = Self.registrableDomain(host) ?? host
                if hostsByDomain[key] == nil { order.append(key) }
                if !(hostsByDomain[key]?.contains(host) ?? false) { hostsByDomain[key, default: []].append(host) }
            }
            rules += "[allow] message=\"Seen in recorded traffic\"\n"
            var ids = Set<String>()
            for key in order {
                let hosts = hostsByDomain[key] ?? []
                let collapses = hosts.count >= 2 && Self.registrableDomain(key) == key
                var id = Self.identifier(collapses ? key : hosts[0])
                while !ids.insert(id).inserted { id += "-x" }
                let hostPattern = collapses ? "([a-z0-9-]+\\.)*" + Self.escaped(key) : Self.escaped(hosts[0])
                let count = usable.count { (Self.registrableDomain($0.host) ?? $0.host) == key }
                rules += "# \(count) request\(count == 1 ? "" : "s"): \(hosts.joined(separator: ", "))\n"
                rules += "\(id) ^https?://\(hostPattern)(:[0-9]+)?([/?#]|$)\n"
                ruleCount += 1
                for host in hosts { ruleOfCase[host] = id }
            }
            rules += "\n[block] message=\"Not seen in recorded traffic\"\n# everything else\nunseen ^https?://\n"
            ruleCount += 1
            for item in cases {
                tests += "allow      \(category)/\(ruleOfCase[item.host] ?? "-")   \(item.method) \(item.url)\n"
            }
            tests += "block      \(category)/unseen   https://not-seen-in-traffic.invalid/\n"
        case .record:
            rules += "[record]\n"
            var ids = Set<String>()
            var ruleOfPrefix: [String: String] = [:]
            for item in cases where ruleOfPrefix["\(item.host) \(item.segment)"] == nil {
                var id = Self.identifier(item.host + "-" + (item.segment.isEmpty ? "root" : item.segment))
                while !ids.insert(id).inserted { id += "-x" }
                ruleOfPrefix["\(item.host) \(item.segment)"] = id
                let path = item.segment.isEmpty ? "/?" : "/" + Self.escaped(item.segment) + "(/|\\?|#|$)"
                let count = usable.count { $0.host == item.host && Self.firstSegment($0.path) == item.segment }
                rules += "# \(count) request\(count == 1 ? "" : "s") to \(item.host)/\(item.segment)\n"
                rules +=
                    "\(id) ^https?://\(Self.escaped(item.host))(:[0-9]+)?\(path)"
                    + (item.segment.isEmpty ? "([?#]|$)" : "") + "\n"
                ruleCount += 1
            }
            for item in cases {
                tests +=
                    "record     \(category)/\(ruleOfPrefix["\(item.host) \(item.segment)"] ?? "-")   "
                    + "\(item.method) \(item.url)\n"
            }
        }
        return Proposal(
            rules: rules, tests: tests, ruleCount: ruleCount, caseCount: cases.count + (mode == .allowlist ? 1 : 0))
    }
}
