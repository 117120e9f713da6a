// SHA-256 compression: portable C, and SHA-NI on x86-64 (see include/CSHA256.h).

#include "CSHA256.h"

static const uint32_t round_constants[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t rotate_right(uint32_t word, int count) { return (word >> count) | (word << (32 - count)); }

void csha256_compress_portable(uint32_t state[8], const uint8_t *data, size_t blocks) {
    uint32_t w[64];
    for (; blocks > 0; blocks--, data += 64) {
        for (int i = 0; i < 16; i++) {
            const uint8_t *word = data + 4 * i;
            w[i] = (uint32_t)word[0] << 24 | (uint32_t)word[1] << 16 | (uint32_t)word[2] << 8 | (uint32_t)word[3];
        }
        for (int i = 16; i < 64; i++) {
            uint32_t s0 = rotate_right(w[i - 15], 7) ^ rotate_right(w[i - 15], 18) ^ (w[i - 15] >> 3);
            uint32_t s1 = rotate_right(w[i - 2], 17) ^ rotate_right(w[i - 2], 19) ^ (w[i - 2] >> 10);
            w[i] = w[i - 16] + s0 + w[i - 7] + s1;
        }
        uint32_t a = state[0], b = state[1], c = state[2], d = state[3];
        uint32_t e = state[4], f = state[5], g = state[6], h = state[7];
        for (int i = 0; i < 64; i++) {
            uint32_t s1 = rotate_right(e, 6) ^ rotate_right(e, 11) ^ rotate_right(e, 25);
            uint32_t choice = (e & f) ^ (~e & g);
            uint32_t t1 = h + s1 + choice + round_constants[i] + w[i];
            uint32_t s0 = rotate_right(a, 2) ^ rotate_right(a, 13) ^ rotate_right(a, 22);
            uint32_t majority = (a & b) ^ (a & c) ^ (b & c);
            uint32_t t2 = s0 + majority;
            h = g;
            g = f;
            f = e;
            e = d + t1;
            d = c;
            c = b;
            b = a;
            a = t1 + t2;
        }
        state[0] += a;
        state[1] += b;
        state[2] += c;
        state[3] += d;
        state[4] += e;
        state[5] += f;
        state[6] += g;
        state[7] += h;
    }
}

#if defined(__x86_64__)
#include <cpuid.h>
#include <immintrin.h>

/// The blocks through SHA256RNDS2, SHA256MSG1 and SHA256MSG2. The instructions keep the state as
/// two vectors, ABEF and CDGH (a in the highest lane); each SHA256RNDS2 runs two rounds on the low
/// two words of its message-plus-constant vector. The message schedule is kept four words at a
/// time: words 4j…4j+3 come from the four vectors before them.
__attribute__((target("sha,sse4.1,ssse3"))) static void compress_hardware(uint32_t state[8], const uint8_t *data,
                                                                          size_t blocks) {
    // Each 32-bit word of the block is big-endian.
    const __m128i byte_swap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i low = _mm_loadu_si128((const __m128i *)&state[0]);   // lanes a b c d
    __m128i high = _mm_loadu_si128((const __m128i *)&state[4]);  // lanes e f g h
    low = _mm_shuffle_epi32(low, 0xB1);                           // lanes b a d c
    high = _mm_shuffle_epi32(high, 0x1B);                         // lanes h g f e
    __m128i abef = _mm_alignr_epi8(low, high, 8);                 // lanes f e b a
    __m128i cdgh = _mm_blend_epi16(high, low, 0xF0);              // lanes h g d c

    for (; blocks > 0; blocks--, data += 64) {
        const __m128i abef_before = abef, cdgh_before = cdgh;
        __m128i words[4];
        for (int j = 0; j < 16; j++) {
            if (j < 4) {
                words[j] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(data + 16 * j)), byte_swap);
            } else {
                // w[4j…] = σ-expansion of w[4j-16…], w[4j-15…], w[4j-7…] and w[4j-2…].
                __m128i expanded = _mm_sha256msg1_epu32(words[j & 3], words[(j + 1) & 3]);
                expanded = _mm_add_epi32(expanded, _mm_alignr_epi8(words[(j + 3) & 3], words[(j + 2) & 3], 4));
                words[j & 3] = _mm_sha256msg2_epu32(expanded, words[(j + 3) & 3]);
            }
            __m128i message = _mm_add_epi32(words[j & 3], _mm_loadu_si128((const __m128i *)&round_constants[4 * j]));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, message);
            message = _mm_shuffle_epi32(message, 0x0E);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, message);
        }
        abef = _mm_add_epi32(abef, abef_before);
        cdgh = _mm_add_epi32(cdgh, cdgh_before);
    }

    low = _mm_shuffle_epi32(abef, 0x1B);                // lanes a b e f
    high = _mm_shuffle_epi32(cdgh, 0xB1);               // lanes g h c d
    abef = _mm_blend_epi16(low, high, 0xF0);            // lanes a b c d
    cdgh = _mm_alignr_epi8(high, low, 8);               // lanes e f g h
    _mm_storeu_si128((__m128i *)&state[0], abef);
    _mm_storeu_si128((__m128i *)&state[4], cdgh);
}

/// Whether the processor has the SHA extensions and the SSSE3 and SSE4.1 instructions used with them.
static int has_sha_extensions(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    int has_ssse3 = (ecx >> 9) & 1, has_sse41 = (ecx >> 19) & 1;
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return 0;
    return has_ssse3 && has_sse41 && ((ebx >> 29) & 1);
}

/// -1 until the first call looks; then 1 or 0. Racing first calls store the same answer.
static int uses_hardware = -1;

int csha256_uses_hardware(void) {
    int known = __atomic_load_n(&uses_hardware, __ATOMIC_RELAXED);
    if (known < 0) {
        known = has_sha_extensions();
        __atomic_store_n(&uses_hardware, known, __ATOMIC_RELAXED);
    }
    return known;
}

void csha256_compress(uint32_t state[8], const uint8_t *data, size_t blocks) {
    if (csha256_uses_hardware()) {
        compress_hardware(state, data, blocks);
    } else {
        csha256_compress_portable(state, data, blocks);
    }
}
#else
int csha256_uses_hardware(void) { return 0; }

void csha256_compress(uint32_t state[8], const uint8_t *data, size_t blocks) {
    csha256_compress_portable(state, data, blocks);
}
#endif
