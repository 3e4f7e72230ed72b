/* ropelab merge DIR... --out DIR */
#include <stdio.h>

#include "cli/cli.h"
#include "core/rl_util.h"
#include "run/run.h"

int cmd_merge(int argc, char **argv)
{
    const char *out = "merged", *pos[256];
    int n_pos = 0;
    const cli_opt opts[] = {
        {"--out", CLI_STR, &out, "DIR", "merged output directory (default ./merged)"},
    };
    int rc = cli_parse("ropelab merge DIR... [--out DIR]",
                       "Combines the outputs of `ropelab run --shard I/N` into one results.csv,\n"
                       "manifest.json and runs/ (each verified run directory copied); the same\n"
                       "plan run on several devices merges into one results.csv with a device\n"
                       "column. Reports missing shards and missing or duplicated runs (the same\n"
                       "run on the same device twice); exit code 1 when the merged plan is\n"
                       "incomplete.",
                       argc, argv, opts, RL_ARRAY_LEN(opts), pos, 256, &n_pos);
    if (rc >= 0)
        return rc;
    if (n_pos < 1) {
        cli_error("name the shard output directories (ropelab merge DIR...)");
        return CLI_EXIT_USAGE;
    }
    run_merge_report rep;
    rl_error err = {0};
    rl_status st = run_merge(pos, (size_t)n_pos, out, &rep, stderr, &err);
    if (st) {
        cli_error("%s", err.msg);
        /* results that disagree (a CPU run differing between partitions)
         * fail like a verification; everything else is bad input */
        return st == RL_ERR_MISMATCH ? CLI_EXIT_FAIL : CLI_EXIT_USAGE;
    }
    if (rep.shards_seen < rep.shard_count)
        fprintf(stderr, "ropelab: missing shard(s) %s of %u\n", rep.missing_shards, rep.shard_count);
    printf("merged %u of %u shard(s): %zu of %zu run(s) present, %zu missing (%zu of them listed "
           "but incomplete, %zu failed), %zu duplicated; results in %s/results.csv\n",
           rep.shards_seen, rep.shard_count, rep.present, rep.plan, rep.missing, rep.incomplete,
           rep.failed, rep.duplicated, out);
    if (rep.cpu_shared)
        printf("%zu CPU run(s) given by more than one device partition, the same bytes in each: "
               "kept once\n", rep.cpu_shared);
    return rep.missing || rep.duplicated || rep.incomplete || rep.failed ? CLI_EXIT_FAIL
                                                                          : CLI_EXIT_OK;
}
