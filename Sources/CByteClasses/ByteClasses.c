// The byte-class kernels are static inline in include/CByteClasses.h; the token marker is here.
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
