/// The text a pattern is matched against, held as UTF-8 bytes.
///
/// Build it once and match many patterns against it. Bytes need not be valid UTF-8: PCRE2's
/// invalid-UTF mode never matches across an ill-formed sequence and never misreads one.
public struct MatchSubject: Sendable, Hashable {
    /// The subject's bytes.
    public let bytes: [UInt8]

    /// A subject made of a string's UTF-8 encoding.
    public init(_ text: String) {
        self.bytes = Array(text.utf8)
    }

    /// A subject made of raw bytes, which may be ill-formed UTF-8.
    public init(bytes: [UInt8]) {
        self.bytes = bytes
    }

    /// The bytes in `range` decoded as UTF-8 (ill-formed sequences become U+FFFD).
    public func text(in range: Range<Int>) -> String {
        String(decoding: bytes[range], as: UTF8.self)
    }
}
