import AuditRegex

extension Policy {
    /// Whether some rule could decide a request to `origin` (`https://HOST[:PORT]/`, canonical) on
    /// more than its origin: its path, query, method or headers, or by an action that needs the
    /// request itself (`redirect`, `respond`, `warn`, `cache`).
    ///
    /// An intercepting proxy terminates a tunnel's TLS only when this says yes: otherwise the
    /// decision of the CONNECT is the decision of every request inside. The answer errs towards yes
    /// (a rule is assumed to reach further when its pattern cannot be proved not to), and is kept per
    /// origin for this policy's lifetime.
    public func decidesBeyondOrigin(_ origin: String, host: String) -> Bool {
        if let known = originDepths.withLock({ $0[origin] }) { return known }
        let answer = rules.contains { $0.decidesBeyondOrigin(origin, host: host) }
        originDepths.withLock { depths in
            if depths.count >= 65_536 { depths.removeAll(keepingCapacity: true) }
            depths[origin] = answer
        }
        return answer
    }
}

extension Rule {
    /// Whether this rule could decide a request to `origin` on more than its origin.
    func decidesBeyondOrigin(_ origin: String, host: String) -> Bool {
        let reach: Pattern.PrefixMatch
        switch field {
        case .url:
            reach = (try? pattern.prefixMatch(origin)) ?? .some
        case .host:
            let matches = (try? pattern.matches(host)) ?? true
            reach = matches ? .every : .none
        case .path, .query, .userinfo, .method, .header:
            reach = .some
        }
        switch (reach, action) {
        case (.none, _):
            return false
        case (_, .redirect), (_, .respond), (_, .warn), (_, .cache):
            return true
        case (.some, _):
            return true
        case (.every, _):
            return !methods.isEmpty
        }
    }
}
