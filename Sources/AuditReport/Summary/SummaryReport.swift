import Foundation

/// The summary of one or more audit logs: what `audit report` writes as `summary.json` and renders
/// as Markdown and HTML. Versioned by ``reportSchema``; keys are written sorted.
public struct SummaryReport: Codable, Sendable, Equatable {
    /// A count for a name (host, rule, pair).
    public struct Count: Codable, Sendable, Equatable {
        /// The name.
        public var name: String
        /// How many.
        public var count: Int
        /// For merged summaries: how much `count` may be short, because some summaries merged had
        /// this name below their top list (nil: exact).
        public var errorBound: Int?

        /// A count.
        public init(name: String, count: Int, errorBound: Int? = nil) {
            self.name = name
            self.count = count
            self.errorBound = errorBound
        }
    }

    /// One bucket of the decision-time histogram: values from `lowerBound` up to about 1/32 more.
    public struct HistogramBucket: Codable, Sendable, Equatable {
        /// The bucket's number.
        public var index: Int
        /// Decisions in it.
        public var count: Int
    }

    /// A category's requests per verdict.
    public struct CategoryCount: Codable, Sendable, Equatable {
        /// Category of the deciding rule.
        public var category: String
        /// Requests decided by its rules.
        public var total: Int
        /// Per verdict.
        public var verdicts: [String: Int]
    }

    /// How often a rule matched.
    public struct RuleHits: Codable, Sendable, Equatable {
        /// Full rule id.
        public var rule: String
        /// Times it decided the verdict.
        public var decided: Int
        /// Times it was among the recorded rules.
        public var recorded: Int
    }

    /// A redirect from a request URL to a target.
    public struct RedirectPair: Codable, Sendable, Equatable {
        /// The request URL.
        public var from: String
        /// The redirect target.
        public var to: String
        /// How many times.
        public var count: Int
    }

    /// Requests in one time bucket.
    public struct ShadowDifference: Codable, Sendable, Equatable {
        /// The live verdict.
        public var live: String
        /// The shadow policy's verdict.
        public var shadow: String
        /// The rule behind the difference.
        public var rule: String?
        /// Requests.
        public var count: Int

        /// A difference from its parts.
        public init(live: String, shadow: String, rule: String?, count: Int) {
            self.live = live
            self.shadow = shadow
            self.rule = rule
            self.count = count
        }
    }

    /// One point of the timeline: requests per verdict in one bucket.
    public struct TimelinePoint: Codable, Sendable, Equatable {
        /// Start of the bucket (UTC).
        public var start: Date
        /// Per verdict.
        public var verdicts: [String: Int]
    }

    /// Decision-time percentiles in nanoseconds (nearest rank; within 1/32 of the exact value, `max` exact).
    public struct Percentiles: Codable, Sendable, Equatable {
        /// Decisions measured.
        public var count: Int
        /// Median.
        public var p50: UInt64
        /// 90th percentile.
        public var p90: UInt64
        /// 99th percentile.
        public var p99: UInt64
        /// Largest.
        public var max: UInt64
    }

    /// What a cache rule (or a host under cache rules) saved.
    public struct CacheCount: Codable, Sendable, Equatable {
        /// The rule's id, or the host.
        public var name: String
        /// Requests a cache rule matched.
        public var requests: Int
        /// Of those, answered from the cache (`cached`, `revalidated`, `stale`).
        public var hits: Int
        /// Of those, stored from the server's response (`stored`).
        public var stored: Int
        /// Body bytes served from the cache instead of the server (a revalidation's too: its body
        /// did not come again).
        public var bytesSaved: Int

        /// A count from its parts.
        public init(name: String, requests: Int, hits: Int, stored: Int, bytesSaved: Int) {
            self.name = name
            self.requests = requests
            self.hits = hits
            self.stored = stored
            self.bytesSaved = bytesSaved
        }

        /// Hits among the requests, from 0 to 1.
        public var hitRatio: Double { requests == 0 ? 0 : Double(hits) / Double(requests) }
    }

    /// An error that ended requests, and how often.
    public struct ErrorCount: Codable, Sendable, Equatable {
        /// Error domain.
        public var domain: String
        /// Error code.
        public var code: Int
        /// One description seen for it.
        public var description: String
        /// How many requests.
        public var count: Int
    }

    /// The schema version of this document.
    public var reportSchema = 1
    /// The logs read.
    public var logs: [String] = []
    /// The `--since` filter, if any.
    public var since: Date?
    /// The `--until` filter, if any.
    public var until: Date?
    /// Time of the first and last request counted.
    public var firstRequest: Date?
    /// Time of the last request counted.
    public var lastRequest: Date?
    /// Requests counted.
    public var totalRequests = 0
    /// Requests per verdict (every verdict present).
    public var verdicts: [String: Int] = [:]
    /// Requests per category of the deciding rule, largest first.
    public var categories: [CategoryCount] = []
    /// Rules that matched, most hits first.
    public var rules: [RuleHits] = []
    /// Rules of the policy that never matched (when the policy was given).
    public var rulesWithoutHits: [String]?
    /// Top hosts per verdict.
    public var topHostsByVerdict: [String: [Count]] = [:]
    /// Top hosts per category of the deciding rule.
    public var topHostsByCategory: [String: [Count]] = [:]
    /// Most frequent redirects.
    public var redirects: [RedirectPair] = []
    /// Matches of record rules per rule.
    public var recordedByRule: [String: Int] = [:]
    /// Matches of record rules per category.
    public var recordedByCategory: [String: Int] = [:]
    /// `minute`, `hour` or `day`.
    public var timelineBucket = "minute"
    /// Requests a shadow policy decided differently, by live verdict → shadow verdict and the
    /// shadow's deciding rule (or the live one when the shadow's decides nothing), most first; nil
    /// when no record carries a shadow decision.
    public var shadowDifferences: [ShadowDifference]?
    /// Requests over time.
    public var timeline: [TimelinePoint] = []
    /// Decision-time percentiles.
    public var decisionTime = Percentiles(count: 0, p50: 0, p90: 0, p99: 0, max: 0)
    /// The decision-time histogram behind ``decisionTime``, so summaries merge into exact
    /// percentiles (nil in summaries written before it was kept).
    public var decisionTimeHistogram: [HistogramBucket]?
    /// What cache rules saved, per rule, most requests first; nil when no request matched one.
    public var cacheByRule: [CacheCount]?
    /// What cache rules saved, per host, most requests first (the top hosts); nil when no request
    /// matched one.
    public var cacheByHost: [CacheCount]?
    /// Requests per outcome kind.
    public var outcomes: [String: Int] = [:]
    /// Errors that ended requests (failures, cancellations, refusals), most frequent first.
    public var errors: [ErrorCount] = []
    /// Requests where a rule's match failed.
    public var requestsWithMatchErrors = 0
    /// Match failures per rule.
    public var matchErrorsByRule: [String: Int] = [:]
    /// Log lines skipped as invalid (torn ones included).
    public var skippedLines = 0
    /// Skipped lines that were torn last lines.
    public var tornLines = 0
    /// The first few skipped lines, described.
    public var skippedExamples: [String] = []
}
