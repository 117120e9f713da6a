#ifndef CLITERALSEARCH_H
#define CLITERALSEARCH_H

// The search AuditRegex runs instead of PCRE2 for a pattern that is one literal string: 16
// positions at a time, comparing the literal's first and last bytes (SSE2), then the bytes
// between at the positions where both agree.

#include <stddef.h>
#include <stdint.h>

/// The offset of the first place `literal` (`literal_count` bytes, at least 1) occurs in
/// `subject`, or -1. With `caseless`, capitals of the subject are lower-cased before comparing,
/// and `literal` must hold no capital. When `non_ascii` is not null, it is set to whether the
/// subject has a byte of 0x80 or more; it is read in full only when the literal is not found
/// (once found, it may be left false).
long literal_search(const uint8_t *subject, size_t count, const uint8_t *literal, size_t literal_count,
                    int caseless, int *non_ascii);

#endif
