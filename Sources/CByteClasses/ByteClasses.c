// The byte-class kernels are static inline in include/CByteClasses.h; the token hasher and marker,
// the search for a few byte pairs and the span of host bytes are here.
#include "CByteClasses.h"

/// index_next_pair_start for `pair_count` pairs, their vectors built: with the count constant,
/// the pairs' loop unrolls.
static inline __attribute__((always_inline)) long next_pair_start(const uint8_t *bytes, long count, long from,
                                                                  const uint8_t *firsts, const uint8_t *seconds,
                                                                  const int *pairs, int pair_count,
                                                                  uint32_t without_second) {
#if defined(__SSE2__)
    if (count >= 17) {
        __m128i bit5 = _mm_set1_epi8(0x20);
        __m128i first_vectors[32], second_vectors[32], any_second[32];
        for (int n = 0; n < pair_count; n++) {
            first_vectors[n] = _mm_set1_epi8((char)firsts[pairs[n]]);
            second_vectors[n] = _mm_set1_epi8((char)seconds[pairs[n]]);
            any_second[n] = _mm_set1_epi8((without_second >> pairs[n]) & 1 ? (char)0xFF : 0);
        }
        // The last block ends at the byte before the last; it overlaps the one before, whose
        // positions are masked off.
        for (long index = from; index < count - 1;) {
            long block = index < count - 17 ? index : count - 17;
            __m128i here = _mm_or_si128(_mm_loadu_si128((const __m128i *)(bytes + block)), bit5);
            __m128i next = _mm_or_si128(_mm_loadu_si128((const __m128i *)(bytes + block + 1)), bit5);
            __m128i starts = _mm_setzero_si128();
            for (int n = 0; n < pair_count; n++) {
                __m128i second = _mm_or_si128(_mm_cmpeq_epi8(next, second_vectors[n]), any_second[n]);
                starts = _mm_or_si128(starts, _mm_and_si128(_mm_cmpeq_epi8(here, first_vectors[n]), second));
            }
            uint32_t mask = (uint32_t)_mm_movemask_epi8(starts) & (0xFFFFu << (index - block));
            if (mask != 0) return block + __builtin_ctz(mask);
            index = block + 16;
        }
        return -1;
    }
#endif
    for (long index = from; index < count - 1; index++) {
        uint8_t here = bytes[index] | 0x20, next = bytes[index + 1] | 0x20;
        for (int n = 0; n < pair_count; n++) {
            if (here == firsts[pairs[n]] && (((without_second >> pairs[n]) & 1) || next == seconds[pairs[n]])) {
                return index;
            }
        }
    }
    return -1;
}

long index_next_pair_start(const uint8_t *bytes, long count, long from, const uint8_t *firsts,
                           const uint8_t *seconds, uint32_t active, uint32_t without_second) {
    int pairs[32];
    int pair_count = 0;
    for (; active != 0; active &= active - 1) pairs[pair_count++] = __builtin_ctz(active);
    switch (pair_count) {
    case 0: return -1;
    case 1: return next_pair_start(bytes, count, from, firsts, seconds, pairs, 1, without_second);
    case 2: return next_pair_start(bytes, count, from, firsts, seconds, pairs, 2, without_second);
    default: return next_pair_start(bytes, count, from, firsts, seconds, pairs, pair_count, without_second);
    }
}

#if defined(__SSE2__)
/// Bit n set when byte n of `block` is not a lower-case letter, a digit, `.` or `-`.
static inline uint32_t non_host_bytes(__m128i block) {
    // x - low < width, unsigned, as a signed comparison after moving the range to the bottom.
    __m128i bias = _mm_set1_epi8((char)0x80);
    __m128i letter = _mm_cmplt_epi8(_mm_add_epi8(_mm_sub_epi8(block, _mm_set1_epi8('a')), bias),
                                    _mm_set1_epi8((char)(0x80 + 26)));
    __m128i digit = _mm_cmplt_epi8(_mm_add_epi8(_mm_sub_epi8(block, _mm_set1_epi8('0')), bias),
                                   _mm_set1_epi8((char)(0x80 + 10)));
    // `-` and `.` are 0x2D and 0x2E.
    __m128i dash_or_dot = _mm_cmplt_epi8(_mm_add_epi8(_mm_sub_epi8(block, _mm_set1_epi8('-')), bias),
                                         _mm_set1_epi8((char)(0x80 + 2)));
    return ~(uint32_t)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(letter, digit), dash_or_dot)) & 0xFFFFu;
}
#else
/// Whether `byte` is a lower-case letter, a digit, `.` or `-`.
static inline int is_host_byte(uint8_t byte) {
    return (uint8_t)(byte - 'a') < 26 || (uint8_t)(byte - '0') < 10 || byte == '.' || byte == '-';
}
#endif

long url_host_span(const uint8_t *bytes, long count, long from) {
#if defined(__SSE2__)
    if (count - from >= 16) {
        for (long index = from; index < count;) {
            // The last block may start before `index`: the bytes it reads again were host bytes.
            long block = index < count - 16 ? index : count - 16;
            uint32_t mask = non_host_bytes(_mm_loadu_si128((const __m128i *)(bytes + block)));
            if (mask != 0) return block + __builtin_ctz(mask);
            index = block + 16;
        }
        return count;
    }
    if (from < count) {
        // Fewer than sixteen bytes: a copy, padded with a byte that ends the span.
        uint8_t padded[16];
        memset(padded, '/', sizeof padded);
        memcpy(padded, bytes + from, (size_t)(count - from));
        uint32_t mask = non_host_bytes(_mm_loadu_si128((const __m128i *)padded));
        long found = from + __builtin_ctz(mask);
        return found < count ? found : count;
    }
    return count;
#else
    long index = from;
    while (index < count && is_host_byte(bytes[index])) index++;
    return index;
#endif
}

int printable_ascii(const uint8_t *bytes, long count) {
    long index = 0;
#if defined(__SSE2__)
    // x - 0x20 < 0x5F, unsigned, as a signed comparison after moving the range to the bottom.
    __m128i bias = _mm_set1_epi8((char)(0x80 - 0x20));
    __m128i limit = _mm_set1_epi8((char)(-128 + 0x5F));
    for (; index + 16 <= count; index += 16) {
        __m128i moved = _mm_add_epi8(_mm_loadu_si128((const __m128i *)(bytes + index)), bias);
        if (_mm_movemask_epi8(_mm_cmplt_epi8(moved, limit)) != 0xFFFF) return 0;
    }
#endif
    for (; index < count; index++) {
        if ((uint8_t)(bytes[index] - 0x20) >= 0x5F) return 0;
    }
    return 1;
}

uint64_t literal_pair_starts(const uint8_t *bytes, long count, long from, const uint64_t *pairs) {
    long end = count - 1 < from + 64 ? count - 1 : from + 64;
    if (from < 0 || from >= end) return 0;
    uint64_t found = 0;
    uint32_t previous = bytes[from] & 0x7F;
    for (long index = from; index < end; index++) {
        uint32_t next = bytes[index + 1] & 0x7F;
        uint32_t pair = previous << 7 | next;
        found |= ((pairs[pair >> 6] >> (pair & 63)) & 1) << (index - from);
        previous = next;
    }
    return found;
}

/// The eight bytes at `bytes`, the first lowest.
static inline uint64_t load64(const uint8_t *bytes) {
    uint64_t word;
    memcpy(&word, bytes, 8);
    return word;
}

/// The high and low halves of the 128-bit product of `a` and `b`, XORed.
static inline uint64_t folded_multiply(uint64_t a, uint64_t b) {
    unsigned __int128 product = (unsigned __int128)a * b;
    return (uint64_t)(product >> 64) ^ (uint64_t)product;
}

/// A token's hash, and its first and last eight bytes lower-cased.
typedef struct {
    uint64_t hash;
    /// The token's first eight bytes, the first lowest; zero past the end of a shorter token.
    uint64_t first_bytes;
    /// The eight bytes that end with the token's last, the last highest; zero before the start of
    /// a shorter token.
    uint64_t last_bytes;
} TokenWords;

/// IndexKey.tokenHash for the token `bytes[start..<end]` of a buffer that starts at `bytes`; `head`
/// holds eight zero bytes, then the buffer's first eight (zero where it is shorter), so that a
/// token ending before byte 8 is read from it with the same load as any other.
///
/// The common token of up to eight bytes takes no branch: its last eight bytes are loaded (from
/// `head` or the buffer, a conditional move), lower-cased and shifted down so that only its own
/// remain, as the Swift hash does when it loads them byte by byte.
static inline TokenWords token_words(const uint8_t *bytes, const uint8_t *head, long start, long end) {
    const uint64_t lower_case_bits = 0x2020202020202020ull;
    uint64_t state = 0x94d049bb13311115ull;
    long offset = start;
    while (__builtin_expect(end - offset > 8, 0)) {
        state = folded_multiply(state ^ (load64(bytes + offset) | lower_case_bits), 0xbf58476d1ce4e5b9ull);
        offset += 8;
    }
    long rest = end - offset;
    const uint8_t *last = end >= 8 ? bytes + end - 8 : head + end;
    uint64_t last_bytes = load64(last) | lower_case_bits;
    uint64_t word = last_bytes >> ((8 - rest) * 8);
    uint64_t hash = folded_multiply(state ^ word, 0x9e3779b97f4a7c15ull);
    int is_short = end - start <= 8;
    uint64_t first_bytes = is_short ? word : load64(bytes + start) | lower_case_bits;
    // A short token is all of `word`: shifted back up, it ends at the top with zeros below it.
    uint64_t own_last_bytes = is_short ? word << ((8 - rest) * 8) : last_bytes;
    return (TokenWords){hash == 0 ? 1 : hash, first_bytes, own_last_bytes};
}

/// AuditPolicy's AffixGate.mayMatch for a token whose first (last) four bytes, zero-padded, are
/// `quad`.
static inline uint64_t affix_may_match(const IndexAffixGate *gate, uint32_t quad) {
    uint32_t bit = (quad * 0x9E3779B1u) >> gate->quad_shift;
    return (gate->quads[bit >> 6] >> (bit & 63)) & 1;
}

/// Whether U+212A (E2 84 AA) or U+017F (C5 BF) starts at an index in `start..<end` of
/// `bytes[0..<count]`.
static int has_ascii_folding_character(const uint8_t *bytes, long count, long start, long end) {
    for (long index = start; index < end; index++) {
        if (bytes[index] == 0xC5 && index + 1 < count && bytes[index + 1] == 0xBF) return 1;
        if (bytes[index] == 0xE2 && index + 2 < count && bytes[index + 1] == 0x84 && bytes[index + 2] == 0xAA)
            return 1;
    }
    return 0;
}

/// Where the scan writes its tokens and marks, and how many of each so far.
typedef struct {
    IndexToken *tokens;
    long count;
    int32_t *marked;
    long marked_count;
} TokenOutput;

/// What `hash_tokens` reads to mark a token, as bits of a constant (one copy of its loop each).
enum { READS_GATE = 1, READS_PREFIXES = 2, READS_SUFFIXES = 4, READS_AUTHORITY = 8 };

/// Hashes the token `bytes[start..<end]`, appends it, and marks it when a gate in `reads` lets it
/// through. With `reads` constant, the marking takes no branch but the authority's, whose outcome
/// changes once or twice a subject.
static inline __attribute__((always_inline)) void emit_token(const uint8_t *bytes, const uint8_t *head, long start,
                                                             long end, const IndexTokenGates *gates, TokenOutput *out,
                                                             int reads) {
    TokenWords words = token_words(bytes, head, start, end);
    uint64_t hash = words.hash;
    long index = out->count;
    out->tokens[index] = (IndexToken){hash, (int32_t)start, (int32_t)end};
    out->count = index + 1;
    if (reads == 0) return;
    uint64_t marks = 0;
    if (reads & READS_GATE) {
        uint64_t slot = (hash >> 40) & gates->gate_mask;
        marks |= (gates->gate[slot >> 5] >> (2 * (slot & 31))) & 3;
    }
    if (reads & READS_PREFIXES) marks |= affix_may_match(&gates->prefixes, (uint32_t)words.first_bytes) << 2;
    if (reads & READS_SUFFIXES) {
        // The last four bytes, the last lowest.
        uint32_t quad = __builtin_bswap32((uint32_t)(words.last_bytes >> 32));
        marks |= affix_may_match(&gates->suffixes, quad) << 3;
    }
    if ((reads & READS_AUTHORITY) && start >= gates->authority_start && start < gates->authority_end) {
        uint64_t slot = (hash >> 40) & gates->authority_gate_mask;
        marks |= ((gates->authority_gate[slot >> 5] >> (2 * (slot & 31))) & 3) << 4;
    }
    out->marked[out->marked_count] = (int32_t)(index << 6 | (long)marks);
    out->marked_count += marks != 0;
}

/// index_hash_tokens for one choice of the gates read.
static inline __attribute__((always_inline)) void hash_tokens(const uint8_t *bytes, long count, int *flags,
                                                              const IndexTokenGates *gates, TokenOutput *out,
                                                              int reads) {
    uint8_t head[16] = {0};
    if (count > 0) memcpy(head + 8, bytes, count < 8 ? (size_t)count : 8);
    // The start of a token that began in an earlier block and runs on, or -1.
    long carried_start = -1;
    for (long block_start = 0; block_start < count;) {
        long length = count - block_start < 64 ? count - block_start : 64;
        ByteClassMasks masks = byte_classes(bytes, (size_t)count, (size_t)block_start, (size_t)length);
        if (masks.nonASCII != 0) {
            *flags |= INDEX_TOKENS_NON_ASCII;
            if (has_ascii_folding_character(bytes, count, block_start, block_start + length)) {
                *flags |= INDEX_TOKENS_UNTOKENIZABLE;
                return;
            }
        }
        // Where a token starts, and where one ends (the first byte after it); bits past a short
        // block's end are clear, so a token running to the end of the block ends there.
        uint64_t before = masks.alnum << 1 | (carried_start >= 0 ? 1 : 0);
        uint64_t starts = masks.alnum & ~before;
        uint64_t ends = ~masks.alnum & before;
        if (carried_start >= 0 && ends != 0) {
            long end = block_start + __builtin_ctzll(ends);
            emit_token(bytes, head, carried_start, end, gates, out, reads);
            ends &= ends - 1;
            carried_start = -1;
        }
        while (ends != 0) {
            long start = block_start + __builtin_ctzll(starts);
            long end = block_start + __builtin_ctzll(ends);
            emit_token(bytes, head, start, end, gates, out, reads);
            starts &= starts - 1;
            ends &= ends - 1;
        }
        // A start left without an end runs into the next block.
        if (starts != 0) carried_start = block_start + __builtin_ctzll(starts);
        block_start += length;
    }
    if (carried_start >= 0) emit_token(bytes, head, carried_start, count, gates, out, reads);
}

#define HASH_TOKENS_CASE(reads)                                                                                        \
    case reads: hash_tokens(bytes, count, flags, gates, &out, reads); break;

long index_hash_tokens(const uint8_t *bytes, long count, IndexToken *tokens, int *flags,
                       const IndexTokenGates *gates, int32_t *marked, long *marked_count) {
    TokenOutput out = {tokens, 0, marked, 0};
    int reads = gates == 0 ? 0
                           : (gates->gate != 0 ? READS_GATE : 0) |
                                 (gates->prefixes.quads != 0 ? READS_PREFIXES : 0) |
                                 (gates->suffixes.quads != 0 ? READS_SUFFIXES : 0) |
                                 (gates->authority_gate != 0 ? READS_AUTHORITY : 0);
    switch (reads) {
        HASH_TOKENS_CASE(1)
        HASH_TOKENS_CASE(2)
        HASH_TOKENS_CASE(3)
        HASH_TOKENS_CASE(4)
        HASH_TOKENS_CASE(5)
        HASH_TOKENS_CASE(6)
        HASH_TOKENS_CASE(7)
        HASH_TOKENS_CASE(8)
        HASH_TOKENS_CASE(9)
        HASH_TOKENS_CASE(10)
        HASH_TOKENS_CASE(11)
        HASH_TOKENS_CASE(12)
        HASH_TOKENS_CASE(13)
        HASH_TOKENS_CASE(14)
        HASH_TOKENS_CASE(15)
    default: hash_tokens(bytes, count, flags, gates, &out, 0); break;
    }
    if (marked_count) *marked_count = out.marked_count;
    return out.count;
}

void index_token_bloom(const IndexToken *tokens, long count, uint64_t *words, long bits) {
    uint64_t mask = (uint64_t)bits - 1;
    for (long index = 0; index < count; index++) {
        uint64_t hash = tokens[index].hash;
        uint64_t first = hash & mask, second = (hash >> 32) & mask;
        words[first >> 6] |= 1ull << (first & 63);
        words[second >> 6] |= 1ull << (second & 63);
    }
}

long url_authority_end(const uint8_t *bytes, long count, long from) {
    long index = from < 0 ? 0 : from;
#if defined(__SSE2__)
    __m128i slash = _mm_set1_epi8('/'), question = _mm_set1_epi8('?'), hash = _mm_set1_epi8('#');
    for (; index + 16 <= count; index += 16) {
        __m128i block = _mm_loadu_si128((const __m128i *)(bytes + index));
        __m128i found = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(block, slash), _mm_cmpeq_epi8(block, question)),
                                     _mm_cmpeq_epi8(block, hash));
        uint32_t mask = (uint32_t)_mm_movemask_epi8(found);
        if (mask != 0) return index + __builtin_ctz(mask);
    }
#endif
    for (; index < count; index++) {
        if (bytes[index] == '/' || bytes[index] == '?' || bytes[index] == '#') return index;
    }
    return count;
}

/// `word`'s capital letters lower-cased, all its bytes below 0x80: a byte gets its top bit from
/// adding 0x3F when it is `A` or above, and from adding 0x25 when it is above `Z`.
static inline uint64_t lowercased_word(uint64_t word) {
    uint64_t from_a = word + 0x3F3F3F3F3F3F3F3Full;
    uint64_t past_z = word + 0x2525252525252525ull;
    return word | ((from_a & ~past_z & 0x8080808080808080ull) >> 2);
}

static inline uint8_t lowercased_byte(uint8_t byte) { return (uint8_t)(byte - 'A') < 26 ? byte | 0x20 : byte; }

void literal_set_search(const uint8_t *subject, long count, const uint64_t *pairs, const uint16_t *pair_groups,
                        const int32_t *group_starts, const LiteralEntry *entries, const uint8_t *tails,
                        uint64_t *found) {
    for (long block = 0; block < count - 1; block += 64) {
        uint64_t starts = literal_pair_starts(subject, count, block, pairs);
        while (starts != 0) {
            long start = block + __builtin_ctzll(starts);
            starts &= starts - 1;
            // Bytes outside printable ASCII (which the caller never passes) have no group.
            unsigned first = (unsigned)lowercased_byte(subject[start]) - 0x20;
            unsigned second = (unsigned)lowercased_byte(subject[start + 1]) - 0x20;
            if (first >= 95 || second >= 95) continue;
            int group = pair_groups[first * 95 + second];
            uint64_t word = 0;
            if (start + 8 <= count) {
                word = load64(subject + start);
            } else {
                // The bytes up to the end, zero past it: no literal has a zero byte.
                memcpy(&word, subject + start, (size_t)(count - start));
            }
            word = lowercased_word(word);
            for (int slot = group_starts[group]; slot < group_starts[group + 1]; slot++) {
                const LiteralEntry *entry = &entries[slot];
                if ((word & entry->head_mask) != entry->head) continue;
                uint64_t bit = 1ull << (entry->number & 63);
                if (found[entry->number >> 6] & bit) continue;
                if (entry->length > 8) {
                    if (start + entry->length > count) continue;
                    int same = 1;
                    for (long offset = 8; offset < entry->length; offset++) {
                        if (lowercased_byte(subject[start + offset]) != tails[entry->tail + offset - 8]) {
                            same = 0;
                            break;
                        }
                    }
                    if (!same) continue;
                }
                found[entry->number >> 6] |= bit;
            }
        }
    }
}

/// Bit n: byte n (below 0x40), or byte 0x40 + n, is printable ASCII a canonical path or query keeps
/// as it is wherever it stands (all of 0x21–0x7E but `"#%'./<>?\`{}`).
static const uint64_t url_plain_low = 0x2fff3f5200000000ull;
static const uint64_t url_plain_high = 0x57fffffeefffffffull;

static inline int url_hex(uint8_t byte) {
    if (byte >= '0' && byte <= '9') return byte - '0';
    if (byte >= 'A' && byte <= 'F') return byte - 'A' + 10;
    if (byte >= 'a' && byte <= 'f') return byte - 'a' + 10;
    return -1;
}

static inline int url_unreserved(uint8_t byte) {
    return (byte >= 'a' && byte <= 'z') || (byte >= 'A' && byte <= 'Z') || (byte >= '0' && byte <= '9') ||
           byte == '-' || byte == '.' || byte == '_' || byte == '~';
}

/// Where the scan of a path and query is.
typedef struct {
    int is_query;
    uint8_t previous;
} url_scan;

/// Whether the `.` at `index` (after a `/`) starts a `.` or `..` segment of a path that ends at
/// `?`, `#` or the end.
static inline int url_dot_segment(const uint8_t *bytes, long count, long index) {
    long next = index + 1;
    if (next < count && bytes[next] == '.') next++;
    return next >= count || bytes[next] == '/' || bytes[next] == '?' || bytes[next] == '#';
}

/// Whether the escape at `index` (a `%`) is one the canonical form keeps: not followed by two hex
/// digits (kept as written), or the escape of a reserved byte in upper-case hex.
static inline int url_escape_kept(const uint8_t *bytes, long count, long index) {
    int high = index + 1 < count ? url_hex(bytes[index + 1]) : -1;
    int low = index + 2 < count ? url_hex(bytes[index + 2]) : -1;
    if (high < 0 || low < 0) return 1;
    return bytes[index + 1] < 'a' && bytes[index + 2] < 'a' && !url_unreserved((uint8_t)(high << 4 | low));
}

/// Reads the byte at `index`: 1 when the URL is canonical there, else 0.
static inline int url_scan_byte(url_scan *scan, const uint8_t *bytes, long count, long index) {
    uint8_t byte = bytes[index];
    int plain = byte < 64 ? (int)((url_plain_low >> byte) & 1) : byte < 128 ? (int)((url_plain_high >> (byte - 64)) & 1) : 0;
    if (!plain) {
        switch (byte) {
        case '/':
            if (!scan->is_query && scan->previous == '/') return 0;
            break;
        case '.':
            if (!scan->is_query && scan->previous == '/' && url_dot_segment(bytes, count, index)) return 0;
            break;
        case '?':
            scan->is_query = 1;
            break;
        case '%':
            // Its hex digits, read next, are plain bytes.
            if (!url_escape_kept(bytes, count, index)) return 0;
            break;
        case '\'':
            if (scan->is_query) return 0;
            break;
        case '`':
        case '{':
        case '}':
            if (!scan->is_query) return 0;
            break;
        default:
            return 0;
        }
    }
    scan->previous = byte;
    return 1;
}

#if defined(__SSE2__)
/// Bit n: byte n of `block` is outside 0x21–0x7E.
static inline uint32_t url_unprintable16(__m128i block) {
    // 0x21–0x7E is 94 values: shifted to start at -128, they are the bytes below -128 + 94.
    __m128i shifted = _mm_add_epi8(block, _mm_set1_epi8((char)(0x80 - 0x21)));
    return (uint32_t)_mm_movemask_epi8(_mm_cmpgt_epi8(shifted, _mm_set1_epi8((char)(-128 + 93)))) & 0xFFFF;
}

#endif

#if defined(__SSE2__)
/// Bit n: byte n of `block` equals `byte`.
static inline uint32_t url_eq16(__m128i block, char byte) {
    return (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(block, _mm_set1_epi8(byte)));
}

/// Bit n: byte n of `block` is in `low`…`high`.
static inline uint32_t url_in16(__m128i block, char low, char high) {
    // Shifted so that `low` lands on -128: the range is then the bytes below -128 + its size.
    __m128i shifted = _mm_add_epi8(block, _mm_set1_epi8((char)(0x80 - (uint8_t)low)));
    return (uint32_t)_mm_movemask_epi8(_mm_cmplt_epi8(shifted, _mm_set1_epi8((char)(-128 + (high - low) + 1))));
}

/// Whether the escapes at the bits of `escapes` in the sixteen bytes at `bytes` are all kept by the
/// canonical form: each `%` followed by two hex digits must have them in upper case and must not
/// stand for an unreserved byte; a `%` not followed by two hex digits is kept as written. Reads
/// two bytes past the block, told by masks: bit n of a mask of the bytes at `bytes + 1` (or + 2)
/// is about the first (or second) digit after the `%` at n.
static inline int url_escapes_kept16(const uint8_t *bytes, uint32_t escapes) {
    __m128i high = _mm_loadu_si128((const __m128i *)(bytes + 1));
    __m128i low = _mm_loadu_si128((const __m128i *)(bytes + 2));
    uint32_t high_digit = url_in16(high, '0', '9'), low_digit = url_in16(low, '0', '9');
    uint32_t high_upper = url_in16(high, 'A', 'F'), low_upper = url_in16(low, 'A', 'F');
    uint32_t high_lower = url_in16(high, 'a', 'f'), low_lower = url_in16(low, 'a', 'f');
    uint32_t is_escape = escapes & (high_digit | high_upper | high_lower) & (low_digit | low_upper | low_lower);
    if (is_escape & (high_lower | low_lower)) return 0;
    // The escapes of unreserved bytes, in upper-case hex: 2D 2E, 30–39, 41–4F, 50–5A 5F, 61–6F, 70–7A 7E.
    uint32_t low_1_9 = url_in16(low, '1', '9');
    uint32_t unreserved =
        (url_eq16(high, '2') & (url_eq16(low, 'D') | url_eq16(low, 'E'))) | (url_eq16(high, '3') & low_digit) |
        ((url_eq16(high, '4') | url_eq16(high, '6')) & (low_1_9 | low_upper)) |
        (url_eq16(high, '5') & (low_digit | url_eq16(low, 'A') | url_eq16(low, 'F'))) |
        (url_eq16(high, '7') & (low_digit | url_eq16(low, 'A') | url_eq16(low, 'E')));
    return (is_escape & unreserved) == 0;
}

/// Checks the sixteen bytes at `bytes + index`, of which the bits of `valid` count: the bytes never
/// allowed in the part they are in, each escape, and in the path `//` and dot segments, told by
/// masks; the `?` that starts the query splits a block. 1 when they are canonical.
static inline __attribute__((always_inline)) int url_canonical_block(const uint8_t *bytes, long count, long index,
                                                                     uint32_t valid, url_scan *scan) {
    __m128i block = _mm_loadu_si128((const __m128i *)(bytes + index));
    __m128i never = _mm_or_si128(
        _mm_or_si128(_mm_cmpeq_epi8(block, _mm_set1_epi8('"')), _mm_cmpeq_epi8(block, _mm_set1_epi8('#'))),
        _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(block, _mm_set1_epi8('<')), _mm_cmpeq_epi8(block, _mm_set1_epi8('>'))),
                     _mm_cmpeq_epi8(block, _mm_set1_epi8('\\'))));
    if (((url_unprintable16(block) | (uint32_t)_mm_movemask_epi8(never)) & valid) != 0) return 0;
    uint32_t escapes = url_eq16(block, '%') & valid;
    uint32_t path = valid, query = 0;
    if (scan->is_query) {
        path = 0;
        query = valid;
    } else {
        uint32_t questions = url_eq16(block, '?') & valid;
        if (questions) {
            path = ((questions & (0u - questions)) - 1) & valid;
            query = valid & ~path;
            scan->is_query = 1;
        }
    }
    if (path) {
        __m128i braces = _mm_or_si128(
            _mm_cmpeq_epi8(block, _mm_set1_epi8('`')),
            _mm_or_si128(_mm_cmpeq_epi8(block, _mm_set1_epi8('{')), _mm_cmpeq_epi8(block, _mm_set1_epi8('}'))));
        if (((uint32_t)_mm_movemask_epi8(braces) & path) != 0) return 0;
        uint32_t slashes = url_eq16(block, '/') & path;
        // The first byte counted follows the last one checked before.
        uint32_t after_slash = (slashes << 1) | (scan->previous == '/' ? valid & (0u - valid) : 0u);
        if (slashes & after_slash) return 0;
        uint32_t dots = url_eq16(block, '.') & after_slash & path;
        for (; dots != 0; dots &= dots - 1) {
            if (url_dot_segment(bytes, count, index + __builtin_ctz(dots))) return 0;
        }
    }
    if (query && (url_eq16(block, '\'') & query) != 0) return 0;
    if (escapes != 0) {
        if (index + 18 <= count) {
            if (!url_escapes_kept16(bytes + index, escapes)) return 0;
        } else {
            for (; escapes != 0; escapes &= escapes - 1) {
                if (!url_escape_kept(bytes, count, index + __builtin_ctz(escapes))) return 0;
            }
        }
    }
    scan->previous = bytes[index + 15];
    return 1;
}
#endif

#if defined(__x86_64__) && defined(__SSE2__)
#include <cpuid.h>
#include <immintrin.h>

#define URL_AVX2 __attribute__((target("avx2")))

/// Bit n: byte n of the 32 bytes of `block` equals `byte`.
static inline URL_AVX2 uint32_t url_eq32(__m256i block, char byte) {
    return (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(block, _mm256_set1_epi8(byte)));
}

/// Bit n: byte n of `block` is in `low`…`high` (see url_in16).
static inline URL_AVX2 uint32_t url_in32(__m256i block, char low, char high) {
    __m256i shifted = _mm256_add_epi8(block, _mm256_set1_epi8((char)(0x80 - (uint8_t)low)));
    return (uint32_t)_mm256_movemask_epi8(
        _mm256_cmpgt_epi8(_mm256_set1_epi8((char)(-128 + (high - low) + 1)), shifted));
}

/// url_canonical_block for the 32 bytes at `bytes + index`, all of them counted.
static inline URL_AVX2 int url_canonical_block32(const uint8_t *bytes, long count, long index, url_scan *scan) {
    __m256i block = _mm256_loadu_si256((const __m256i *)(bytes + index));
    // Outside 0x21–0x7E, or one of `"#<>\` (`<` and `>` are the bytes that are `>` once bit 1 is set).
    uint32_t printable = url_in32(block, 0x21, 0x7E);
    uint32_t never = url_in32(block, '"', '#') | url_eq32(_mm256_or_si256(block, _mm256_set1_epi8(2)), '>') |
                     url_eq32(block, '\\');
    if ((~printable | never) != 0) return 0;
    uint32_t escapes = url_eq32(block, '%');
    uint32_t path = 0xFFFFFFFFu, query = 0;
    if (scan->is_query) {
        path = 0;
        query = 0xFFFFFFFFu;
    } else {
        uint32_t questions = url_eq32(block, '?');
        if (questions) {
            path = (questions & (0u - questions)) - 1;
            query = ~path;
            scan->is_query = 1;
        }
    }
    if (path) {
        uint32_t braces = url_eq32(block, '`') | url_eq32(block, '{') | url_eq32(block, '}');
        if (braces & path) return 0;
        uint32_t slashes = url_eq32(block, '/') & path;
        uint32_t after_slash = (slashes << 1) | (scan->previous == '/' ? 1u : 0u);
        if (slashes & after_slash) return 0;
        uint32_t dots = url_eq32(block, '.') & after_slash & path;
        for (; dots != 0; dots &= dots - 1) {
            if (url_dot_segment(bytes, count, index + __builtin_ctz(dots))) return 0;
        }
    }
    if (query && (url_eq32(block, '\'') & query) != 0) return 0;
    if (escapes != 0) {
        if (index + 34 <= count) {
            if (!url_escapes_kept16(bytes + index, escapes & 0xFFFF) ||
                !url_escapes_kept16(bytes + index + 16, escapes >> 16)) {
                return 0;
            }
        } else {
            for (; escapes != 0; escapes &= escapes - 1) {
                if (!url_escape_kept(bytes, count, index + __builtin_ctz(escapes))) return 0;
            }
        }
    }
    scan->previous = bytes[index + 31];
    return 1;
}

/// Checks the 32-byte blocks from `*index` on while 32 bytes are left, moving `*index` past them.
/// 0 when one is not canonical.
static URL_AVX2 int url_canonical_blocks32(const uint8_t *bytes, long count, long *index, url_scan *scan) {
    for (; *index + 32 <= count; *index += 32) {
        if (!url_canonical_block32(bytes, count, *index, scan)) return 0;
    }
    return 1;
}

/// Whether the processor and the system run AVX2 code (CPUID leaf 7's AVX2 bit, and the YMM state
/// saved by the system, as XGETBV tells); asked once.
static int url_has_avx2(void) {
    static int known = -1;
    if (known >= 0) return known;
    unsigned a, b, c, d;
    int has = 0;
    if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_OSXSAVE) && (c & bit_AVX)) {
        unsigned low, high;
        __asm__("xgetbv" : "=a"(low), "=d"(high) : "c"(0));
        if ((low & 6) == 6 && __get_cpuid_count(7, 0, &a, &b, &c, &d)) has = (b & bit_AVX2) != 0;
    }
    known = has;
    return has;
}
#endif

int url_path_query_is_canonical(const uint8_t *bytes, long count, long from) {
    url_scan scan = {0, 0};
    long index = from < 0 ? 0 : from;
#if defined(__x86_64__) && defined(__SSE2__)
    if (count - index >= 32 && url_has_avx2() && !url_canonical_blocks32(bytes, count, &index, &scan)) return 0;
#endif
#if defined(__SSE2__)
    for (; index + 16 <= count; index += 16) {
        if (!url_canonical_block(bytes, count, index, 0xFFFF, &scan)) return 0;
    }
    if (index < count && count >= 16) {
        // The last bytes, as the top of the sixteen that end the URL; those before them were
        // checked already (or are the authority's) and are not counted.
        long start = count - 16;
        return url_canonical_block(bytes, count, start, 0xFFFFu << (index - start) & 0xFFFFu, &scan);
    }
    if (index < count) {
        // A URL of fewer than sixteen bytes: its last bytes copied into a block padded with a plain
        // letter; lookups past them see the end (`rest`), as they would in place.
        // `z`: a plain letter that is no hex digit, so no escape reaches past the end.
        uint8_t tail[32];
        long rest = count - index;
        memset(tail, 'z', sizeof tail);
        memcpy(tail, bytes + index, (size_t)rest);
        return url_canonical_block(tail, rest, 0, (1u << rest) - 1, &scan);
    }
    return 1;
#else
    return url_path_query_is_canonical_bytewise(bytes, count, index);
#endif
}

int url_path_query_is_canonical_bytewise(const uint8_t *bytes, long count, long from) {
    url_scan scan = {0, 0};
    long index = from < 0 ? 0 : from;
    for (; index < count; index++) {
        if (!url_scan_byte(&scan, bytes, count, index)) return 0;
    }
    return 1;
}

/// Whether `bytes[start..<end]` is four decimal parts of 0–255 without leading zeros.
static int url_dotted_decimal(const uint8_t *bytes, long start, long end) {
    int parts = 0;
    long index = start;
    while (index < end) {
        long part_start = index;
        int value = 0;
        while (index < end && bytes[index] >= '0' && bytes[index] <= '9' && index - part_start < 3) {
            value = value * 10 + (bytes[index] - '0');
            index++;
        }
        long length = index - part_start;
        if (length == 0 || value > 255 || (length > 1 && bytes[part_start] == '0')) return 0;
        parts++;
        if (index == end) break;
        if (bytes[index] != '.' || parts >= 4) return 0;
        index++;
    }
    return parts == 4 && index == end;
}

long url_canonical_authority_end(const uint8_t *bytes, long count) {
    // `https://` or `http://` as written, told by one load (a URL shorter than 8 bytes has no
    // host after them).
    if (count < 8) return -1;
    uint64_t scheme = load64(bytes);
    long authority;
    if (scheme == 0x2F2F3A7370747468ull) {
        authority = 8;
    } else if ((scheme & 0x00FFFFFFFFFFFFFFull) == 0x002F2F3A70747468ull) {
        authority = 7;
    } else {
        return -1;
    }
    long host_end = url_host_span(bytes, count, authority);
    if (host_end <= authority || bytes[host_end - 1] == '.') return -1;
    // A last label that spells a number (digits, or `0x` and hex digits) makes the host an IPv4
    // address (or invalid): such a label ends in a digit, `a`–`f` or `x`. One that starts with a
    // digit is taken for one, and must be dotted decimal.
    uint8_t last = bytes[host_end - 1];
    if (!(last >= 'g' && last <= 'z' && last != 'x')) {
        long label = host_end - 1;
        while (label > authority && bytes[label - 1] != '.') label--;
        if (bytes[label] >= '0' && bytes[label] <= '9' && !url_dotted_decimal(bytes, authority, host_end)) return -1;
    }
    long end = host_end;
    if (host_end < count && bytes[host_end] == ':') {
        // A port other than the scheme's default, written without leading zeros.
        end = host_end + 1;
        long port = 0;
        while (end < count && bytes[end] >= '0' && bytes[end] <= '9' && end - host_end <= 5) {
            port = port * 10 + (bytes[end] - '0');
            end++;
        }
        long default_port = authority == 8 ? 443 : 80;
        if (end == host_end + 1 || bytes[host_end + 1] == '0' || port > 65535 || port == default_port) return -1;
    }
    if (end == count || bytes[end] == '/' || bytes[end] == '?' || bytes[end] == '#') return end;
    return -1;
}

int url_is_canonical(const uint8_t *bytes, long count) {
    long path = url_canonical_authority_end(bytes, count);
    if (path < 0 || path >= count || bytes[path] != '/') return 0;
    return url_path_query_is_canonical(bytes, count, path);
}

long url_lightly_canonicalized(const uint8_t *bytes, long count, uint8_t *out, uint32_t *changes) {
    static const char hex_digits[] = "0123456789ABCDEF";
    long authority_end = url_canonical_authority_end(bytes, count);
    if (authority_end < 0) return -1;
    memcpy(out, bytes, (size_t)authority_end);
    long written = authority_end;
    uint32_t found = 0;
    // An empty path is `/`.
    if (authority_end == count || bytes[authority_end] != '/') out[written++] = '/';
    int is_query = 0;
    for (long index = authority_end; index < count; index++) {
        // A run of bytes kept as they are anywhere (url_plain_low and url_plain_high) goes in whole.
        long run = index;
        while (run < count && bytes[run] < 128 &&
               ((bytes[run] < 64 ? url_plain_low >> bytes[run] : url_plain_high >> (bytes[run] - 64)) & 1)) {
            run++;
        }
        if (run > index) {
            memcpy(out + written, bytes + index, (size_t)(run - index));
            written += run - index;
            index = run;
            if (index == count) break;
        }
        uint8_t byte = bytes[index];
        if (byte == '#') {
            // Spaces and controls are stripped from the ends, tabs and newlines from anywhere, by
            // the full parse, before the fragment is dropped.
            for (long rest = index + 1; rest < count; rest++) {
                if (bytes[rest] <= 0x20) return -1;
            }
            found |= URL_CHANGE_FRAGMENT_REMOVED;
            break;
        }
        // Bytes the canonical form escapes (or, for `\`, reads as `/`): the full parse's.
        if (byte <= 0x20 || byte >= 0x7F || byte == '"' || byte == '<' || byte == '>' || byte == '\\') return -1;
        if (byte == '%') {
            int high = index + 2 < count ? url_hex(bytes[index + 1]) : -1;
            int low = index + 2 < count ? url_hex(bytes[index + 2]) : -1;
            if (high < 0 || low < 0) {
                out[written++] = '%';  // not an escape: kept as written
                continue;
            }
            uint8_t decoded = (uint8_t)(high << 4 | low);
            if (url_unreserved(decoded)) {
                // A `.` may make a dot segment (`%2e`), which the full parse resolves.
                if (decoded == '.') return -1;
                out[written++] = decoded;
                found |= URL_CHANGE_UNRESERVED_DECODED;
            } else {
                if (bytes[index + 1] >= 'a' || bytes[index + 2] >= 'a') found |= URL_CHANGE_ESCAPES_UPPER_CASED;
                out[written++] = '%';
                out[written++] = (uint8_t)hex_digits[high];
                out[written++] = (uint8_t)hex_digits[low];
            }
            index += 2;
            continue;
        }
        if (is_query) {
            if (byte == '\'') return -1;
        } else if (byte == '?') {
            is_query = 1;
        } else if (byte == '`' || byte == '{' || byte == '}') {
            return -1;
        } else if (byte == '/' && out[written - 1] == '/') {
            found |= URL_CHANGE_SLASHES_MERGED;
            continue;
        } else if (byte == '.' && bytes[index - 1] == '/' && url_dot_segment(bytes, count, index)) {
            return -1;
        }
        out[written++] = byte;
    }
    *changes = found;
    return written;
}
