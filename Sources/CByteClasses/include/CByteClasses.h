#ifndef CBYTECLASSES_H
#define CBYTECLASSES_H

// Byte classes of up to 64 bytes at once, for the token scanner in AuditPolicy, and the places
// where a few byte pairs start, for its search for a few inside keys; and the tokens of a subject
// that pass the index's gates; and how far a URL's host is in normalized form; and, for the
// shortcuts, whether a subject is printable ASCII, where their literals' first pairs stand and
// which of their literals occur.
//
// Swift has no portable way to turn a vector comparison into a bit mask (SSE2's movemask), and
// its SIMD types compile byte comparisons to a loop, so these kernels are C: the byte classes
// static inline, so the Swift compiler inlines them into the scan; the marker and the pair search
// compiled on their own (ByteClasses.c). Without SSE2 they fall back to byte loops.

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/// Bits of one block: bit n describes byte `start + n`.
typedef struct {
    /// Set for an ASCII letter or digit.
    uint64_t alnum;
    /// Set for a byte of 0x80 or more.
    uint64_t nonASCII;
} ByteClassMasks;

#if defined(__SSE2__)
/// The letters and digits of 16 bytes as 16 bits. A byte is in [lo, lo + n) exactly when adding
/// 0x80 - lo (wrapping) lands it in [-128, -128 + n) as a signed byte.
static inline uint32_t byte_classes_alnum16(__m128i bytes) {
    __m128i digits = _mm_cmplt_epi8(_mm_add_epi8(bytes, _mm_set1_epi8((char)(0x80 - 0x30))),
                                    _mm_set1_epi8((char)(-128 + 10)));
    __m128i folded = _mm_or_si128(bytes, _mm_set1_epi8(0x20));
    __m128i letters = _mm_cmplt_epi8(_mm_add_epi8(folded, _mm_set1_epi8((char)(0x80 - 0x61))),
                                     _mm_set1_epi8((char)(-128 + 26)));
    return (uint32_t)_mm_movemask_epi8(_mm_or_si128(digits, letters));
}
#endif

/// The classes of `bytes[start..<start + length]` (`length` from 1 to 64) of a buffer of `count`
/// bytes; bits from `length` up are clear. Reads only inside the buffer.
static inline ByteClassMasks byte_classes(const uint8_t *bytes, size_t count, size_t start, size_t length) {
    ByteClassMasks masks = {0, 0};
#if defined(__SSE2__)
    size_t offset = 0;
    for (; offset + 16 <= length; offset += 16) {
        __m128i chunk = _mm_loadu_si128((const __m128i *)(bytes + start + offset));
        masks.alnum |= (uint64_t)byte_classes_alnum16(chunk) << offset;
        masks.nonASCII |= (uint64_t)(uint32_t)_mm_movemask_epi8(chunk) << offset;
    }
    if (offset < length) {
        // The rest is fewer than 16 bytes and ends the buffer (a block shorter than 64 bytes is
        // the last), so the 16 bytes that end the buffer hold it at their top, when there are 16.
        size_t rest = length - offset;
        __m128i chunk;
        uint32_t shift;
        if (count >= 16) {
            chunk = _mm_loadu_si128((const __m128i *)(bytes + count - 16));
            shift = (uint32_t)(16 - rest);
        } else {
            uint8_t copy[16] = {0};
            memcpy(copy, bytes + start + offset, rest);
            chunk = _mm_loadu_si128((const __m128i *)copy);
            shift = 0;
        }
        uint32_t keep = (1u << rest) - 1;
        masks.alnum |= (uint64_t)((byte_classes_alnum16(chunk) >> shift) & keep) << offset;
        masks.nonASCII |= (uint64_t)(((uint32_t)_mm_movemask_epi8(chunk) >> shift) & keep) << offset;
    }
#else
    for (size_t offset = 0; offset < length; offset++) {
        uint8_t byte = bytes[start + offset];
        uint8_t folded = byte | 0x20;
        int isAlnum = (byte >= '0' && byte <= '9') || (folded >= 'a' && folded <= 'z');
        masks.alnum |= (uint64_t)isAlnum << offset;
        masks.nonASCII |= (uint64_t)(byte >= 0x80) << offset;
    }
#endif
    return masks;
}

/// One token of a subject as AuditPolicy keeps it (TokenHashes.Token): its hash, and where it
/// starts and ends (the first byte after it).
typedef struct {
    uint64_t hash;
    int32_t start;
    int32_t end;
} IndexToken;

/// `index_hash_tokens` found a byte of 0x80 or more.
#define INDEX_TOKENS_NON_ASCII 1
/// `index_hash_tokens` stopped at U+212A (Kelvin sign, E2 84 AA) or U+017F (long s, C5 BF).
#define INDEX_TOKENS_UNTOKENIZABLE 2

/// Whether a token may start (end) with one of a set of keys, as AuditPolicy's AffixGate keeps it:
/// by the token's first (last) four bytes lower-cased, `q` (the first lowest; read backwards for
/// an end, the last lowest; zero past the start or end of a shorter token), in a one-hash Bloom
/// filter whose bit for `q` is `(q * 0x9E3779B1) >> quad_shift`, 32 bits wide.
typedef struct {
    const uint64_t *quads;
    uint32_t quad_shift;
} IndexAffixGate;

/// The gates `index_hash_tokens` marks tokens by; a null gate (or affix gate whose `quads` is
/// null) is not read.
typedef struct {
    /// Two bits per slot, 32 slots a word; bits 40 and up of a token's hash pick its slot under
    /// `gate_mask`.
    const uint64_t *gate;
    uint64_t gate_mask;
    /// Whether a token may start with a prefix key, or end with a suffix key.
    IndexAffixGate prefixes;
    IndexAffixGate suffixes;
    /// Read as `gate` is, for the tokens that start in `authority_start..<authority_end` only.
    const uint64_t *authority_gate;
    uint64_t authority_gate_mask;
    long authority_start;
    long authority_end;
} IndexTokenGates;

/// Writes the tokens of `bytes[0..<count]` (runs of ASCII letters and digits) to `tokens`, in
/// order, each with its hash, and returns how many; `tokens` has room for `count / 2 + 1`. The
/// hash is AuditPolicy's `IndexKey.tokenHash`, bit for bit: the token lower-cased, read eight
/// bytes at a time into a folded multiply. Sets `INDEX_TOKENS_NON_ASCII` in `*flags` once a block
/// of 64 bytes holding a byte of 0x80 or more is read, and stops, setting
/// `INDEX_TOKENS_UNTOKENIZABLE`, at a block where U+212A or U+017F starts (PCRE2 matches them
/// caselessly against `k` and `s`, which tokens cannot express); the tokens written before then
/// are those of the blocks before it. Reads `bytes[0..<count]` only.
///
/// With `gates`, also marks the tokens that pass one as it finds them: writes to `marked` (room
/// for as many entries as tokens) an entry for each token whose slot of the gate is not clear,
/// that may start with a prefix key or end with a suffix key, or that starts in the authority
/// range and whose slot of the authority gate is not clear, in order, and their number to
/// `*marked_count`. An entry is the token's index times 64, plus its slot's two bits, plus 4 when
/// it may start with a prefix key, plus 8 when it may end with a suffix key, plus its authority
/// slot's two bits times 16; `count` must then be below 2^25, so that an index fits.
///
/// Not inline (ByteClasses.c): one copy of the loop per choice of gates, with no bounds check and
/// no branch per token for the marks.
long index_hash_tokens(const uint8_t *bytes, long count, IndexToken *tokens, int *flags,
                       const IndexTokenGates *gates, int32_t *marked, long *marked_count);

/// Sets two bits in `words` (`bits` of them, a power of two and at least 64) for each of the
/// `count` tokens: bits `hash` and `hash >> 32`, each taken modulo `bits`. AuditPolicy's
/// TokenHashes asks this Bloom filter whether a long subject has a token.
///
/// Not inline (ByteClasses.c): a loop over every token of a long subject, without the bounds
/// checks Swift made on each word.
void index_token_bloom(const IndexToken *tokens, long count, uint64_t *words, long bits);

/// The first position p from `from` up, and before the last byte, where for some pair k set in
/// `active` (at most 32) byte p of `bytes` with bit 5 set is `firsts[k]` and byte p + 1 with bit
/// 5 set is `seconds[k]` (not tested for a pair set in `without_second`); -1 when there is none.
/// Reads `bytes[0..<count]` only.
///
/// Setting bit 5 lower-cases a capital letter and leaves lower-case letters and digits as they
/// are, so for pairs of lower-case letters and digits no position where they stand, in either
/// case, is missed; now and then a position holds other bytes (0x10 for `0`), so the caller
/// compares the bytes at each position found. Sixteen positions at a time with SSE2.
///
/// Not inline (ByteClasses.c): compiled on its own, its loop keeps the pairs' vectors in registers.
long index_next_pair_start(const uint8_t *bytes, long count, long from, const uint8_t *firsts,
                           const uint8_t *seconds, uint32_t active, uint32_t without_second);

/// The index of the first byte at or after `from` of `bytes[0..<count]` that is not a lower-case
/// letter, a digit, `.` or `-` (the bytes of a normalized host name), or `count` if there is none.
/// Sixteen bytes at a time with SSE2, the last block overlapping the one before.
///
/// Not inline (ByteClasses.c): for the check that a URL is already in normalized form.
long url_host_span(const uint8_t *bytes, long count, long from);

/// The index of the first `/`, `?` or `#` at or after `from` of `bytes[0..<count]` (where a URL's
/// authority ends), or `count` if there is none. Sixteen bytes at a time with SSE2.
long url_authority_end(const uint8_t *bytes, long count, long from);

/// Whether `bytes[0..<count]` is surely a canonical URL (AuditPolicy's URLParts.isCanonical): `http://`
/// or `https://` as written, a host of lower-case letters, digits, dots and dashes not ending in a dot
/// (an IPv4 address as four decimal parts), a port other than the default without leading zeros,
/// then a path and query ``url_path_query_is_canonical`` accepts. 1 or 0.
int url_is_canonical(const uint8_t *bytes, long count);

/// Where what follows the authority of `bytes[0..<count]` starts (a `/`, `?`, `#` or the end)
/// when everything before it is as ``url_is_canonical`` requires, else -1.
long url_canonical_authority_end(const uint8_t *bytes, long count);

/// What ``url_lightly_canonicalized`` changed, as AuditPolicy's URLChanges has it.
#define URL_CHANGE_SLASHES_MERGED (1u << 13)
#define URL_CHANGE_UNRESERVED_DECODED (1u << 14)
#define URL_CHANGE_ESCAPES_UPPER_CASED (1u << 16)
#define URL_CHANGE_FRAGMENT_REMOVED (1u << 17)

/// The canonical form of `bytes[0..<count]` without the full parse, for the URLs that are not
/// canonical as sent only because of what a copy fixes in one pass: a fragment, an empty path,
/// escapes of unreserved bytes or in lower-case hex, repeated slashes in the path. Writes it to
/// `out` (room for `count + 1` bytes), what changed to `*changes` (``URL_CHANGE_SLASHES_MERGED``
/// and the others), and returns its length; returns -1 for any other URL (scheme, host or port
/// not as ``url_is_canonical`` requires, a dot segment, a byte the canonical form escapes), which
/// takes the full parse.
long url_lightly_canonicalized(const uint8_t *bytes, long count, uint8_t *out, uint32_t *changes);

/// Whether `bytes[from..<count]`, a URL's path and query from its first `/`, is surely in canonical
/// form (AuditPolicy's URLParts): printable ASCII with nothing the canonical form escapes or
/// decodes, no `//` or dot segment in the path, and percent-escapes only of reserved bytes in
/// upper-case hex. 1 or 0. Sixteen bytes at a time (SSE2), thirty-two where the processor has AVX2
/// (CPUID, asked once); the last bytes as the top of the sixteen that end the URL.
int url_path_query_is_canonical(const uint8_t *bytes, long count, long from);

/// ``url_path_query_is_canonical`` a byte at a time: the reference its blocks of sixteen (SSE2)
/// and thirty-two (AVX2, where the processor has it) bytes are tested against.
int url_path_query_is_canonical_bytewise(const uint8_t *bytes, long count, long from);

/// Whether every byte of `bytes[0..<count]` is printable ASCII (0x20–0x7E). Sixteen bytes at a
/// time with SSE2.
///
/// Not inline (ByteClasses.c): the shortcuts' check that they may answer for a subject.
int printable_ascii(const uint8_t *bytes, long count);

/// The positions p of `from..<min(from + 64, count - 1)` where bytes p and p + 1 are a pair set
/// in `pairs`: bit n of the result for position from + n. `pairs` holds 128 × 128 bits, bit
/// 128 × first + second for the pair (first, second); a byte's bit 7 is ignored. The bytes are
/// compared as they are: a caller that searches without case sets each pair in every case.
/// Reads `bytes[from..<min(from + 65, count)]` only.
///
/// No branch per position: the pairs the shortcuts' literals start with are common in URLs
/// (`.c`, `co`, `//`), and a branch on each was mispredicted about one time in five.
uint64_t literal_pair_starts(const uint8_t *bytes, long count, long from, const uint64_t *pairs);

/// One literal of a shortcut literal set (AuditPolicy's LiteralSet), as `literal_set_search`
/// reads it.
typedef struct {
    /// The literal's first eight bytes, the first lowest, lower-cased; zero past its end.
    uint64_t head;
    /// Ones over the bytes of `head` that are the literal's.
    uint64_t head_mask;
    /// Its bit in the search's result.
    int32_t number;
    int32_t length;
    /// Where its bytes past the eighth start in the set's tails.
    int32_t tail;
    int32_t reserved;
} LiteralEntry;

/// Sets bit n of `found` for each literal n of a set that occurs in `subject[0..<count]`, all of
/// it printable ASCII (0x20–0x7E), compared without case (the literals lower-case). The literals
/// are filed by their first two bytes: `pairs` (as `literal_pair_starts` reads it) holds those
/// pairs in either case; `pair_groups[(first - 0x20) * 95 + second - 0x20]` is the group of the
/// pair (`first`, `second`) lower-cased, whose literals are `entries[group_starts[g]..<
/// group_starts[g + 1]]`; `tails` holds each literal's bytes past its eighth.
///
/// Not inline (ByteClasses.c): the pairs' places are found 64 at a time with no branch per byte,
/// and the literals under each compared eight bytes at a time, without a bounds check.
void literal_set_search(const uint8_t *subject, long count, const uint64_t *pairs, const uint16_t *pair_groups,
                        const int32_t *group_starts, const LiteralEntry *entries, const uint8_t *tails,
                        uint64_t *found);

#endif
