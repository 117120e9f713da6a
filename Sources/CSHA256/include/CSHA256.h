#ifndef CSHA256_H
#define CSHA256_H

// The SHA-256 compression function (FIPS 180-4, section 6.2.2) over whole 64-byte blocks, for
// AuditReport's SHA256: the audit log's hash chain is computed once per line by the log writer and
// again by `audit verify`, and hashing is most of what verifying costs.
//
// On x86-64 processors with the SHA extensions (SHA-NI) the blocks go through SHA256RNDS2 and its
// message-schedule instructions, chosen once at run time with CPUID; everywhere else, through
// portable C. Both give the same state for the same input (the tests compare them on every length).

#include <stddef.h>
#include <stdint.h>

/// Compresses `blocks` blocks of 64 bytes at `data` into `state` (a, b, … h), with the processor's
/// SHA instructions when it has them.
void csha256_compress(uint32_t state[8], const uint8_t *data, size_t blocks);

/// ``csha256_compress`` in portable C only, whatever the processor.
void csha256_compress_portable(uint32_t state[8], const uint8_t *data, size_t blocks);

/// 1 when ``csha256_compress`` uses the processor's SHA instructions, 0 otherwise.
int csha256_uses_hardware(void);

#endif
