/* fuzz_file.h — for harnesses of readers that take a path: each input is
 * written to one per-process temporary file (named once, rewritten per
 * input, removed at exit) whose path the reader then opens. */
#ifndef FUZZ_FILE_H
#define FUZZ_FILE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char fuzz_path[64];

static void fuzz_file_remove(void)
{
    unlink(fuzz_path);
}

static inline const char *fuzz_file(const uint8_t *data, size_t size, const char *suffix)
{
    if (!fuzz_path[0]) {
        snprintf(fuzz_path, sizeof fuzz_path, "/tmp/rl_fuzz_%ld%s", (long)getpid(), suffix);
        atexit(fuzz_file_remove);
    }
    FILE *f = fopen(fuzz_path, "wb");
    if (!f)
        abort(); /* the harness cannot work at all: not a finding in the code */
    if (size && fwrite(data, 1, size, f) != size)
        abort();
    fclose(f);
    return fuzz_path;
}

#endif
