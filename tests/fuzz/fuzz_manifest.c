/* libFuzzer harness for the readers of a received results folder:
 * manifest.json and a run's summary.json as `ropelab merge` reads them
 * (batch hash and shard, devices, the job list, each listed run's identity
 * — run id, plan hash, batch hash — and its summary's checksum, its tables'
 * sizes and checksums, the input records), then the copy into a merge and
 * the merged results.csv and manifest.json. The input is manifest.json,
 * then (after the first NUL byte) the summary.json of the run directory
 * runs/0123456789abcdef. Files go to one per-process directory, emptied per
 * input and removed at exit. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/rl_fs.h"
#include "run/run.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fz_root[64];

static void fz_cleanup(void)
{
    rl_fs_remove("/tmp", fz_root, NULL);
}

static void put(const char *path, const uint8_t *d, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(d, 1, n, f) != n) || fclose(f) != 0)
        abort(); /* the harness cannot work at all: not a finding in the code */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    if (!fz_root[0]) {
        snprintf(fz_root, sizeof fz_root, "/tmp/rl_fuzz_manifest_%ld", (long)getpid());
        atexit(fz_cleanup);
    }
    fz_cleanup();
    char shard[128], runs[160], run[200], path[300], out[128];
    snprintf(shard, sizeof shard, "%s/shard", fz_root);
    snprintf(runs, sizeof runs, "%s/runs", shard);
    snprintf(run, sizeof run, "%s/0123456789abcdef", runs);
    snprintf(out, sizeof out, "%s/merged", fz_root);
    if (mkdir(fz_root, 0777) || mkdir(shard, 0777) || mkdir(runs, 0777) || mkdir(run, 0777))
        abort();
    const uint8_t *nul = memchr(data, 0, size);
    size_t n_man = nul ? (size_t)(nul - data) : size;
    snprintf(path, sizeof path, "%s/manifest.json", shard);
    put(path, data, n_man);
    snprintf(path, sizeof path, "%s/summary.json", run);
    put(path, nul ? nul + 1 : data, nul ? size - n_man - 1 : 0);
    snprintf(path, sizeof path, "%s/decay.csv", run);
    put(path, (const uint8_t *)"distance,score\n0,1\n", 19);
    const char *dirs[] = {shard};
    run_merge_report rep;
    rl_error err = {0};
    FILE *sink = fopen("/dev/null", "w");
    if (!sink)
        abort();
    (void)run_merge(dirs, 1, out, &rep, sink, &err);
    fclose(sink);
    return 0;
}
