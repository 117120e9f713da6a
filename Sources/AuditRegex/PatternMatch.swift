/// One successful match: the whole match and each capturing group.
public struct PatternMatch: Sendable, Hashable {
    /// Byte ranges in the subject; index 0 is the whole match, index N is group N, nil when unset.
    public let ranges: [Range<Int>?]
    /// The matched texts, aligned with `ranges`.
    public let groups: [String?]

    init(ranges: [Range<Int>?], subject: MatchSubject) {
        self.ranges = ranges
        self.groups = ranges.map { $0.map(subject.text(in:)) }
    }

    /// The text of group `index` (0 is the whole match), or nil when the group did not take part
    /// in the match or does not exist.
    public subscript(index: Int) -> String? {
        groups.indices.contains(index) ? groups[index] : nil
    }
}
