// The byte-class kernels are static inline in include/CByteClasses.h; the token marker, the
// search for a few byte pairs and the span of host bytes are here.
#include "CByteClasses.h"

/// Whether the pair `pair` (first byte high) is in a set of 65,536 bits (1,024 words).
static inline uint64_t pair_bit(const uint64_t *words, uint32_t pair) {
    return (words[(pair >> 6) & 1023] >> (pair & 63)) & 1;
}

/// index_mark_tokens for one choice of the gates read: with the choice constant, each copy is one
/// loop with no branch per token but the loop's. Every byte of a token is a letter or digit:
/// setting bit 5 lower-cases it.
static inline __attribute__((always_inline)) long mark_tokens(
    const IndexToken *tokens, long count, const uint8_t *bytes, const uint64_t *gate, uint64_t gate_mask,
    const uint64_t *prefix_pairs, const uint64_t *suffix_pairs, int32_t *marked, int reads_gate,
    int reads_prefixes, int reads_suffixes) {
    long found = 0;
    for (long index = 0; index < count; index++) {
        IndexToken token = tokens[index];
        uint64_t marks = 0;
        if (reads_gate) {
            uint64_t slot = (token.hash >> 40) & gate_mask;
            marks |= (gate[slot >> 5] >> (2 * (slot & 31))) & 3;
        }
        int is_long = token.end - token.start > 1;
        if (reads_prefixes) {
            uint32_t first = bytes[token.start] | 0x20;
            uint32_t second = is_long ? bytes[token.start + 1] | 0x20 : 0;
            marks |= pair_bit(prefix_pairs, first << 8 | second) << 2;
        }
        if (reads_suffixes) {
            uint32_t last = bytes[token.end - 1] | 0x20;
            uint32_t before = is_long ? bytes[token.end - 2] | 0x20 : 0;
            marks |= pair_bit(suffix_pairs, last << 8 | before) << 3;
        }
        marked[found] = (int32_t)(index << 4 | (long)marks);
        found += marks != 0;
    }
    return found;
}

long index_mark_tokens(const IndexToken *tokens, long count, const uint8_t *bytes, const uint64_t *gate,
                       uint64_t gate_mask, const uint64_t *prefix_pairs, const uint64_t *suffix_pairs,
                       int32_t *marked) {
    int choice = (gate != 0) << 2 | (prefix_pairs != 0) << 1 | (suffix_pairs != 0);
    switch (choice) {
    case 7: return mark_tokens(tokens, count, bytes, gate, gate_mask, prefix_pairs, suffix_pairs, marked, 1, 1, 1);
    case 6: return mark_tokens(tokens, count, bytes, gate, gate_mask, prefix_pairs, suffix_pairs, marked, 1, 1, 0);
    case 5: return mark_tokens(tokens, count, bytes, gate, gate_mask, prefix_pairs, suffix_pairs, marked, 1, 0, 1);
    case 4: return mark_tokens(tokens, count, bytes, gate, gate_mask, prefix_pairs, suffix_pairs, marked, 1, 0, 0);
    case 3: return mark_tokens(tokens, count, bytes, gate, gate_mask, prefix_pairs, suffix_pairs, marked, 0, 1, 1);
    case 2: return mark_tokens(tokens, count, bytes, gate, gate_mask, prefix_pairs, suffix_pairs, marked, 0, 1, 0);
    case 1: return mark_tokens(tokens, count, bytes, gate, gate_mask, prefix_pairs, suffix_pairs, marked, 0, 0, 1);
    default: return 0;
    }
}

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
