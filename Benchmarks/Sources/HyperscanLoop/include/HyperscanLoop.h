#ifndef HYPERSCANLOOP_H
#define HYPERSCANLOOP_H

// Hyperscan called from C over a batch of subjects, so that the benchmark's Hyperscan figure holds
// no per-subject Swift work: one hs_scan per subject, the scratch space reused, timed in C.

#include <stddef.h>
#include <stdint.h>

/// Scans each subject i, `bytes[starts[i] ..< starts[i + 1]]` for i in 0 ..< count, with one
/// hs_scan call (block mode), reusing `scratch`. Returns the nanoseconds the loop took
/// (CLOCK_MONOTONIC), or -1 when a scan fails; sets `*with_match` to the number of subjects in
/// which some pattern matched. `database` and `scratch` are an hs_database_t and an hs_scratch_t.
long long hyperscan_scan_each(const void *database, void *scratch, const char *bytes, const size_t *starts,
                              size_t count, size_t *with_match);

/// Writes `database` (an hs_database_t) to the file at `path`; 0 on success.
int hyperscan_save(const void *database, const char *path);

/// Reads a database written by hyperscan_save; null when the file is missing or unreadable, or was
/// written by another Hyperscan version or for another platform.
void *hyperscan_load(const char *path);

#endif
