// The Hyperscan baseline as a plain C program, the way an independent harness measures it: reads a
// database written by the benchmark (the same patterns) and the subjects (one per line, the bytes
// the engine sees), scans each subject once per pass, and prints the median pass's ns per subject.
//
// Usage: hyperscan-baseline DATABASE SUBJECTS [PASSES]

#include <hs/hs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "HyperscanLoop.h"

static int compare_doubles(const void *left, const void *right) {
    double a = *(const double *)left, b = *(const double *)right;
    return (a > b) - (a < b);
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: %s DATABASE SUBJECTS [PASSES]\n", argv[0]);
        return 2;
    }
    int passes = argc > 3 ? atoi(argv[3]) : 3;
    if (passes < 1 || passes > 99) passes = 3;
    hs_database_t *database = hyperscan_load(argv[1]);
    if (database == NULL) {
        fprintf(stderr, "%s: cannot read a Hyperscan database\n", argv[1]);
        return 1;
    }
    FILE *file = fopen(argv[2], "rb");
    if (file == NULL) {
        fprintf(stderr, "%s: cannot open\n", argv[2]);
        return 1;
    }
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    char *bytes = malloc((size_t)size + 1);
    if (bytes == NULL || fread(bytes, 1, (size_t)size, file) != (size_t)size) {
        fprintf(stderr, "%s: cannot read\n", argv[2]);
        return 1;
    }
    fclose(file);
    // Subject i is bytes[starts[i] ..< starts[i + 1] - 1]: each line without its newline.
    size_t count = 0;
    for (long index = 0; index < size; index++) count += bytes[index] == '\n';
    size_t *starts = malloc((count + 1) * sizeof *starts);
    size_t *ends = malloc((count + 1) * sizeof *ends);
    size_t line = 0, start = 0;
    for (long index = 0; index < size; index++) {
        if (bytes[index] != '\n') continue;
        starts[line] = start;
        ends[line] = (size_t)index;
        line++;
        start = (size_t)index + 1;
    }
    // Packed without newlines, as the benchmark passes them.
    char *packed = malloc((size_t)size + 1);
    size_t *offsets = malloc((count + 1) * sizeof *offsets);
    size_t length = 0;
    for (size_t index = 0; index < count; index++) {
        offsets[index] = length;
        memcpy(packed + length, bytes + starts[index], ends[index] - starts[index]);
        length += ends[index] - starts[index];
    }
    offsets[count] = length;
    hs_scratch_t *scratch = NULL;
    if (hs_alloc_scratch(database, &scratch) != HS_SUCCESS) {
        fprintf(stderr, "hs_alloc_scratch failed\n");
        return 1;
    }
    double times[99];
    size_t with_match = 0;
    for (int pass = 0; pass < passes; pass++) {
        long long elapsed = hyperscan_scan_each(database, scratch, packed, offsets, count, &with_match);
        if (elapsed < 0) {
            fprintf(stderr, "hs_scan failed\n");
            return 1;
        }
        times[pass] = (double)elapsed / (double)count;
    }
    qsort(times, (size_t)passes, sizeof times[0], compare_doubles);
    printf("%.1f %zu %zu\n", times[passes / 2], count, with_match);
    hs_free_scratch(scratch);
    hs_free_database(database);
    return 0;
}
