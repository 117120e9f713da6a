#include "HyperscanLoop.h"

#include <hs/hs.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long monotonic_nanoseconds(void) {
    struct timespec time;
    clock_gettime(CLOCK_MONOTONIC, &time);
    return (long long)time.tv_sec * 1000000000LL + time.tv_nsec;
}

static int count_match(unsigned int id, unsigned long long from, unsigned long long to, unsigned int flags,
                       void *context) {
    (void)id, (void)from, (void)to, (void)flags;
    *(size_t *)context += 1;
    return 0;  // go on: every pattern that matches is reported, as the engine finds every rule
}

long long hyperscan_scan_each(const void *database, void *scratch, const char *bytes, const size_t *starts,
                              size_t count, size_t *with_match) {
    size_t matched = 0;
    long long start = monotonic_nanoseconds();
    for (size_t index = 0; index < count; index++) {
        size_t matches = 0;
        if (hs_scan((const hs_database_t *)database, bytes + starts[index],
                    (unsigned int)(starts[index + 1] - starts[index]), 0, (hs_scratch_t *)scratch, count_match,
                    &matches) != HS_SUCCESS) {
            return -1;
        }
        matched += matches > 0;
    }
    long long elapsed = monotonic_nanoseconds() - start;
    *with_match = matched;
    return elapsed;
}

int hyperscan_save(const void *database, const char *path) {
    char *serialized = NULL;
    size_t length = 0;
    if (hs_serialize_database((const hs_database_t *)database, &serialized, &length) != HS_SUCCESS) return -1;
    FILE *file = fopen(path, "wb");
    int result = file != NULL && fwrite(serialized, 1, length, file) == length ? 0 : -1;
    if (file != NULL && fclose(file) != 0) result = -1;
    free(serialized);
    return result;
}

void *hyperscan_load(const char *path) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) return NULL;
    char *contents = NULL;
    size_t length = 0, capacity = 0;
    for (;;) {
        if (length == capacity) {
            capacity = capacity ? capacity * 2 : 1 << 20;
            char *larger = realloc(contents, capacity);
            if (larger == NULL) break;
            contents = larger;
        }
        size_t read = fread(contents + length, 1, capacity - length, file);
        length += read;
        if (read == 0) break;
    }
    fclose(file);
    hs_database_t *database = NULL;
    if (contents == NULL || hs_deserialize_database(contents, length, &database) != HS_SUCCESS) database = NULL;
    free(contents);
    return database;
}
