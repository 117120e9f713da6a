#include "CLiteralSearch.h"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

static inline uint8_t folded(uint8_t byte, int caseless) {
    return caseless && byte >= 'A' && byte <= 'Z' ? (uint8_t)(byte | 0x20) : byte;
}

/// Whether `literal` is at `subject` (both at least `count` bytes).
static inline int literal_at(const uint8_t *subject, const uint8_t *literal, size_t count, int caseless) {
    for (size_t index = 0; index < count; index++) {
        if (folded(subject[index], caseless) != literal[index]) return 0;
    }
    return 1;
}

#if defined(__SSE2__)
/// `bytes` with capitals lower-cased when `caseless`.
static inline __m128i folded16(__m128i bytes, int caseless) {
    if (!caseless) return bytes;
    // Capitals are the bytes that adding 0x80 - 0x41 lands in [-128, -128 + 26).
    __m128i capitals = _mm_cmplt_epi8(_mm_add_epi8(bytes, _mm_set1_epi8((char)(0x80 - 0x41))),
                                      _mm_set1_epi8((char)(-128 + 26)));
    return _mm_or_si128(bytes, _mm_and_si128(capitals, _mm_set1_epi8(0x20)));
}
#endif

long literal_search(const uint8_t *subject, size_t count, const uint8_t *literal, size_t literal_count,
                    int caseless, int *non_ascii) {
    if (non_ascii) *non_ascii = 0;
    size_t position = 0;
    int high = 0;
    if (literal_count <= count) {
        size_t last = count - literal_count; // the last position the literal can start at
#if defined(__SSE2__)
        __m128i first = _mm_set1_epi8((char)literal[0]);
        __m128i final = _mm_set1_epi8((char)literal[literal_count - 1]);
        // Only a letter needs the subject's capitals lower-cased to compare with it.
        int fold_first = caseless && literal[0] >= 'a' && literal[0] <= 'z';
        int fold_final = caseless && literal[literal_count - 1] >= 'a' && literal[literal_count - 1] <= 'z';
        __m128i highs = _mm_setzero_si128();
        // Positions position ..< position + 16, reading bytes up to position + 15 + literal_count - 1.
        for (; position + 16 <= last + 1; position += 16) {
            __m128i starts = _mm_loadu_si128((const __m128i *)(subject + position));
            __m128i ends = _mm_loadu_si128((const __m128i *)(subject + position + literal_count - 1));
            highs = _mm_or_si128(highs, starts);
            uint32_t both = (uint32_t)_mm_movemask_epi8(
                _mm_and_si128(_mm_cmpeq_epi8(folded16(starts, fold_first), first),
                              _mm_cmpeq_epi8(folded16(ends, fold_final), final)));
            while (both != 0) {
                size_t at = position + (size_t)__builtin_ctz(both);
                both &= both - 1;
                if (literal_at(subject + at + 1, literal + 1, literal_count - 1, caseless)) return (long)at;
            }
        }
        high = _mm_movemask_epi8(highs) != 0;
#endif
        for (; position <= last; position++) {
            high |= subject[position] >= 0x80;
            if (literal_at(subject + position, literal, literal_count, caseless)) return (long)position;
        }
    }
    if (non_ascii) {
        for (; position < count && !high; position++) high = subject[position] >= 0x80;
        *non_ascii = high;
    }
    return -1;
}
