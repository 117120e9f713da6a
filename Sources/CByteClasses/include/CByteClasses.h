#ifndef CBYTECLASSES_H
#define CBYTECLASSES_H

// Byte classes of up to 64 bytes at once, for the token scanner in AuditPolicy.
//
// Swift has no portable way to turn a vector comparison into a bit mask (SSE2's movemask), and
// its SIMD types compile byte comparisons to a loop, so this one kernel is C: static inline, so
// the Swift compiler inlines it into the scan. Without SSE2 it falls back to a byte loop.

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

#endif
