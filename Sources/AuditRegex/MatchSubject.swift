/// The text a pattern is matched against, held as UTF-8 bytes.
///
/// Build it once and match many patterns against it. Bytes need not be valid UTF-8: PCRE2's
/// invalid-UTF mode never matches across an ill-formed sequence and never misreads one.
///
/// A subject made of a string keeps the string and matches its own UTF-8 storage: making one
/// copies nothing (an evaluation makes one for every request).
public struct MatchSubject: Sendable, Hashable {
    // A subject made of a string keeps it in `text`, with `array` empty; one made of bytes keeps
    // them in `array`. (Two stored properties rather than an enum: reading an enum's payload copied
    // it, at two reference counts a match.)
    @usableFromInline let isText: Bool
    @usableFromInline let text: String
    @usableFromInline let array: [UInt8]

    /// A subject made of a string's UTF-8 encoding.
    public init(_ text: String) {
        isText = true
        self.text = text
        array = []
    }

    /// A subject made of raw bytes, which may be ill-formed UTF-8.
    public init(bytes: [UInt8]) {
        isText = false
        text = ""
        array = bytes
    }

    /// The subject's bytes.
    public var bytes: [UInt8] { isText ? Array(text.utf8) : array }

    /// Calls `body` with the subject's bytes, without copying them.
    ///
    /// Inlinable, so that callers in other modules get it specialized for their closure.
    @inlinable
    public func withBytes<Result, Failure: Error>(
        _ body: (UnsafeBufferPointer<UInt8>) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        guard isText else { return unsafe try array.withUnsafeBufferPointer(body) }
        // A native string's UTF-8 is contiguous, read through its span, which borrows the storage
        // (no reference count); any other (a lazily bridged NSString) is copied once.
        guard text.isContiguousUTF8 else { return unsafe try Array(text.utf8).withUnsafeBufferPointer(body) }
        return unsafe try text.utf8.span.withUnsafeBufferPointer(body)
    }

    /// Calls `body` with the subject's bytes as a span, without copying them.
    @inlinable
    public func withSpan<Result, Failure: Error>(_ body: (Span<UInt8>) throws(Failure) -> Result) throws(Failure)
        -> Result
    {
        isText ? try body(text.utf8.span) : try body(array.span)
    }

    /// The bytes in `range` decoded as UTF-8 (ill-formed sequences become U+FFFD).
    public func text(in range: Range<Int>) -> String {
        unsafe withBytes { unsafe String(decoding: UnsafeBufferPointer(rebasing: $0[range]), as: UTF8.self) }
    }

    /// Subjects are equal when their bytes are.
    public static func == (lhs: MatchSubject, rhs: MatchSubject) -> Bool {
        unsafe lhs.withBytes { left in unsafe rhs.withBytes { right in unsafe left.elementsEqual(right) } }
    }

    /// Hashes the bytes.
    public func hash(into hasher: inout Hasher) {
        unsafe withBytes { unsafe hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }
}
