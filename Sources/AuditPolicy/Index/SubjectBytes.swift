internal import CByteClasses

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// What the index and the URL splitter read of a subject's bytes beyond one byte at a time: words
/// loaded unaligned, a byte searched for with `memchr`, and the C kernels of `CByteClasses`.
///
/// This file is where AuditPolicy hands a subject's bytes to code that reads them through a
/// pointer. Every such read is checked against the span's bounds here, before the pointer is
/// made, so that callers work with `Span`'s checked subscripts and safe calls only.
extension Span where Element == UInt8 {
    /// The eight bytes at `offset`, the first lowest; `offset...offset + 7` must lie inside.
    @inline(__always)
    func word64(at offset: Int) -> UInt64 {
        // RawSpan checks the bounds; "unsafe" in the name is about types that are not plain bytes.
        UInt64(littleEndian: unsafe bytes.unsafeLoadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    /// The four bytes at `offset`, the first lowest.
    @inline(__always)
    func word32(at offset: Int) -> UInt32 {
        UInt32(littleEndian: unsafe bytes.unsafeLoadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    /// The two bytes at `offset`, the first lowest.
    @inline(__always)
    func word16(at offset: Int) -> UInt16 {
        UInt16(littleEndian: unsafe bytes.unsafeLoadUnaligned(fromByteOffset: offset, as: UInt16.self))
    }

    /// The byte at `index`, or 0 outside the span.
    @inline(__always)
    func byteOrZero(at index: Int) -> UInt8 {
        index >= 0 && index < count ? self[index] : 0
    }

    /// The index of the first `byte` in `start..<end` (clamped to the span), or nil.
    func firstIndex(of byte: UInt8, from start: Int, to end: Int) -> Int? {
        let end = Swift.min(end, count)
        guard start >= 0, start < end else { return nil }
        return unsafe withUnsafeBufferPointer { buffer -> Int? in
            guard let base = buffer.baseAddress, let found = unsafe memchr(base + start, Int32(byte), end - start)
            else { return nil }
            return unsafe UnsafeRawPointer(found) - UnsafeRawPointer(base)
        }
    }

    /// The index of the first byte at or after `from` that is not a lower-case letter, a digit,
    /// `.` or `-` (the bytes of a normalized host name), or ``count`` (C kernel `url_host_span`).
    func hostSpan(from start: Int) -> Int {
        guard start >= 0, start < count else { return count }
        return unsafe withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return 0 }
            return unsafe url_host_span(base, buffer.count, start)
        }
    }

    /// Whether the bytes are surely a canonical URL (C kernel `url_is_canonical`).
    func isCanonicalURL() -> Bool {
        unsafe withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return false }
            return unsafe url_is_canonical(base, buffer.count) != 0
        }
    }

    /// The canonical form of the URL these bytes are, and what it changed (URLChanges' raw bits),
    /// made in one pass when only a fragment, an empty path, escapes of unreserved characters or
    /// in lower-case hex, or repeated slashes keep them from it (C kernel
    /// `url_lightly_canonicalized`); nil when it takes the full parse.
    func lightlyCanonicalizedURL() -> (bytes: [UInt8], changes: UInt32)? {
        var changes: UInt32 = 0
        var length = -1
        let bytes = unsafe withUnsafeBufferPointer { buffer -> [UInt8] in
            guard let base = buffer.baseAddress else { return [] }
            return unsafe [UInt8](unsafeUninitializedCapacity: buffer.count + 1) { out, initialized in
                length = unsafe url_lightly_canonicalized(base, buffer.count, out.baseAddress, &changes)
                initialized = max(length, 0)
            }
        }
        return length >= 0 ? (bytes, changes) : nil
    }

    /// Whether the bytes from `from` on are a canonical path and query (C kernel
    /// `url_path_query_is_canonical`, or with `isBytewise` its byte-at-a-time reference).
    func isCanonicalPathAndQuery(from start: Int, isBytewise: Bool = false) -> Bool {
        unsafe withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return true }
            return unsafe isBytewise
                ? url_path_query_is_canonical_bytewise(base, buffer.count, start) != 0
                : url_path_query_is_canonical(base, buffer.count, start) != 0
        }
    }

    /// The index of the first `/`, `?` or `#` at or after `from`, or ``count`` (C kernel
    /// `url_authority_end`).
    func authorityEnd(from start: Int) -> Int {
        guard start >= 0, start < count else { return count }
        return unsafe withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return 0 }
            return unsafe url_authority_end(base, buffer.count, start)
        }
    }

    /// The letters and digits (bit `n`: byte `start + n`) and the bytes of 0x80 or more of
    /// `start..<start + length`, `length` from 1 to 64 (C kernel `byte_classes`). When `length`
    /// is under 64, the block must end the span.
    @inline(__always)
    func byteClasses(from start: Int, length: Int) -> (alnum: UInt64, nonASCII: UInt64) {
        precondition(
            start >= 0 && length > 0 && length <= 64 && start + length <= count
                && (length == 64 || start + length == count),
            "a block of byte classes lies inside the subject")
        return unsafe withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return (0, 0) }
            let masks = unsafe byte_classes(base, buffer.count, start, length)
            return (masks.alnum, masks.nonASCII)
        }
    }

    /// Whether every byte is printable ASCII, 0x20–0x7E (C kernel `printable_ascii`).
    var isPrintableASCII: Bool {
        unsafe withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return true }
            return unsafe printable_ascii(base, buffer.count) != 0
        }
    }

    /// The positions of `start..<min(start + 64, count - 1)` where the byte there and the next
    /// are a pair set in `pairs`: bit `n` for position `start + n` (C kernel
    /// `literal_pair_starts`). `pairs` holds 128 × 128 bits, bit `128 × first + second` for the
    /// pair (`first`, `second`); bit 7 of a byte is ignored. See ``PairBits`` for pairs in either
    /// case.
    func pairStarts(from start: Int, in pairs: Span<UInt64>) -> UInt64 {
        precondition(pairs.count == 256, "a bit for each pair of 7-bit bytes")
        guard start >= 0, start < count - 1 else { return 0 }
        return unsafe withUnsafeBufferPointer { bytes in
            unsafe pairs.withUnsafeBufferPointer { pairs in
                unsafe literal_pair_starts(bytes.baseAddress, bytes.count, start, pairs.baseAddress)
            }
        }
    }

    /// The first position from `start` on, and before the last byte, where for some pair `k` set in
    /// `active` the byte with bit 5 set is `firsts[k]` and the next with bit 5 set is `seconds[k]`
    /// (not compared for a pair set in `withoutSecond`); nil when there is none (C kernel
    /// `index_next_pair_start`). `firsts` and `seconds` hold one byte per pair, at most 32.
    func nextPairStart(
        from start: Int, firsts: Span<UInt8>, seconds: Span<UInt8>, active: UInt32, withoutSecond: UInt32
    ) -> Int? {
        precondition(firsts.count == seconds.count && firsts.count <= 32, "one first and one second byte per pair")
        precondition(active >> firsts.count == 0, "only pairs that exist are active")
        guard start >= 0 else { return nil }
        let position = unsafe withUnsafeBufferPointer { bytes in
            unsafe firsts.withUnsafeBufferPointer { firsts in
                unsafe seconds.withUnsafeBufferPointer { seconds in
                    unsafe index_next_pair_start(
                        bytes.baseAddress, bytes.count, start, firsts.baseAddress, seconds.baseAddress, active,
                        withoutSecond)
                }
            }
        }
        return position >= 0 ? position : nil
    }
}
