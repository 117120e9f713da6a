/// A redirect target or a `respond` body with `$0`…`$9` placeholders for the rule's captures.
///
/// `$` followed by a digit is a placeholder; any other `$` is kept as written. Captures are
/// substituted as matched (no percent-decoding or -encoding). A group that did not take part in
/// the match substitutes as empty text.
public struct RedirectTemplate: Sendable, Hashable, CustomStringConvertible {
    enum Piece: Sendable, Hashable {
        case text(String)
        case group(Int)
    }

    /// The template as written in the section header.
    public let source: String
    let pieces: [Piece]

    /// Parses a template.
    public init(_ source: String) {
        self.source = source
        var pieces: [Piece] = []
        var text = ""
        var index = source.startIndex
        while index < source.endIndex {
            let next = source.index(after: index)
            if source[index] == "$", next < source.endIndex, let digit = source[next].wholeNumberValue,
                source[next].isASCII
            {
                if !text.isEmpty { pieces.append(.text(text)) }
                text = ""
                pieces.append(.group(digit))
                index = source.index(after: next)
            } else {
                text.append(source[index])
                index = next
            }
        }
        if !text.isEmpty { pieces.append(.text(text)) }
        self.pieces = pieces
    }

    /// The highest group number the template uses, or nil when it uses none.
    public var highestGroup: Int? {
        pieces.compactMap { if case .group(let n) = $0 { n } else { nil } }.max()
    }

    /// Whether the template starts with `http://` or `https://`, or with a placeholder that may
    /// supply a whole URL.
    var startsLikeAbsoluteURL: Bool {
        switch pieces.first {
        case .group: true
        case .text(let text): text.lowercased().hasPrefix("http://") || text.lowercased().hasPrefix("https://")
        case nil: false
        }
    }

    /// The text for a match whose groups are `groups` (index 0 is the whole match), each capture
    /// passed through `escape` when given.
    public func expand(groups: [String?], escape: ((String) -> String)? = nil) -> String {
        pieces.map { piece in
            switch piece {
            case .text(let text): text
            case .group(let n):
                n < groups.count ? groups[n].map { escape?($0) ?? $0 } ?? "" : ""
            }
        }.joined()
    }

    /// The template as written.
    public var description: String { source }
}
