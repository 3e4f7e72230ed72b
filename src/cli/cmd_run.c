/* ropelab run FILE [--out DIR] [--device D|all] [--resume] [--shard I/N] [--dry-run] [--quiet] */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "cli_version.h"
#include "plot/plot.h"
#include "core/rl_util.h"
#include "run/run.h"

#define CLI_MAX_RUN_ARGS 256 /* recorded in manifest.json; more are left out */

int cmd_run(int argc, char **argv)
{
    const char *out = NULL, *device = NULL, *shard = NULL, *pos[1];
    int resume = 0, dry = 0, quiet = 0, validate = 1, no_plot = 0, no_pcache = 0, n_pos = 0;
    uint32_t fail_after = 0;
    const cli_opt opts[] = {
        {"--out", CLI_STR, &out, "DIR", "output directory (default: the batch's `output`)"},
        {"--device", CLI_STR, &device, CLI_DEVICE_META, CLI_DEVICE_HELP " (default: the batch's device key, else auto)"},
        {"--resume", CLI_FLAG, &resume, NULL, "skip runs already complete in DIR"},
        {"--shard", CLI_STR, &shard, "I/N",
         "run shard I of N (default: the Slurm array task's, SLURM_ARRAY_TASK_ID - _MIN of _COUNT)"},
        {"--dry-run", CLI_FLAG, &dry, NULL,
         "print the expanded plan with each run's estimated device time (corrected by earlier "
         "runs of its kind, with a band) and memory, and exit"},
        {"--quiet", CLI_FLAG, &quiet, NULL, "no progress on stderr"},
        CLI_OPTS_VALIDATE(&validate, CLI_VALIDATE_ON),
        {"--no-plot", CLI_FLAG, &no_plot, NULL, "do not render figures and report.md at the end"},
        {"--no-pipeline-cache", CLI_FLAG, &no_pcache, NULL,
         "do not load or save the persisted Vulkan pipeline cache (also RL_NO_PIPELINE_CACHE=1)"},
        {"--stop-after", CLI_U32, &fail_after, "K", "testing: stop as if killed after K runs"},
    };
    int rc = cli_parse("ropelab run FILE [--out DIR] [--device D|all] [--resume] [--shard I/N] "
                       "[--dry-run] [--quiet]",
                       "Runs a batch file (docs/runner.md): validates it completely, expands its\n"
                       "sweeps into runs with stable ids, runs them on the chosen devices and writes\n"
                       "OUT/runs/<id>/, OUT/results.csv and OUT/manifest.json. Exit code 1 if any\n"
                       "run failed, 2 if the batch is invalid.",
                       argc, argv, opts, RL_ARRAY_LEN(opts), pos, 1, &n_pos);
    if (rc >= 0)
        return rc;
    if (n_pos != 1) {
        cli_error("name the batch file (ropelab run FILE)");
        return CLI_EXIT_USAGE;
    }
    rl_error err = {0};
    uint32_t si = 0, sn = 1;
    if (run_shard_parse(shard, &si, &sn, &err)) {
        cli_error("%s", err.msg);
        return CLI_EXIT_USAGE;
    }
    run_batch b;
    run_diag diag;
    if (run_batch_load(pos[0], &b, &diag, &err)) {
        if (diag.n) {
            char shown[4096];
            for (size_t i = 0; i < diag.n; i++)
                fprintf(stderr, "%s\n", rl_clean(diag.msg[i], shown, sizeof shown));
            fprintf(stderr, "ropelab: %s: %zu error(s); nothing was run\n", pos[0], diag.n);
        } else {
            cli_error("%s", err.msg);
        }
        run_diag_free(&diag);
        return CLI_EXIT_USAGE;
    }
    if (dry) {
        rl_status pst = run_plan_print(&b, si, sn, stdout, &err);
        run_options eo = {.device = device, .shard_index = si, .shard_count = sn};
        if (!pst)
            pst = run_plan_estimate(&b, &eo, stdout, &err);
        run_batch_free(&b);
        if (pst) {
            cli_error("%s", err.msg);
            return CLI_EXIT_FAIL;
        }
        return CLI_EXIT_OK;
    }
    char out_buf[1024];
    if (!out && b.output[0]) {
        snprintf(out_buf, sizeof out_buf, "%s", b.output); /* outlives run_batch_free */
        out = out_buf;
    }
    if (!out) {
        cli_error("no output directory: give --out DIR or `output:` in the batch");
        run_batch_free(&b);
        return CLI_EXIT_USAGE;
    }
    /* manifest.json's argv: the command line, "ropelab" first (main passes
     * the subcommand's arguments from "run" on) */
    char *full_argv[CLI_MAX_RUN_ARGS + 1];
    int full_argc = 0;
    full_argv[full_argc++] = (char *)"ropelab";
    for (int i = 0; i < argc && full_argc <= CLI_MAX_RUN_ARGS; i++)
        full_argv[full_argc++] = argv[i];
    run_options o = {.out = out, .device = device, .resume = resume, .shard_index = si,
                     .shard_count = sn, .quiet = quiet, .validation = validate,
                     .no_pipeline_cache = no_pcache, .fail_after = (int)fail_after,
                     .stop = &cli_stop_signal, .argc = full_argc, .argv = full_argv,
                     .version = RL_VERSION, .commit = RL_GIT_COMMIT};
    run_outcome res;
    char file_buf[1024];
    snprintf(file_buf, sizeof file_buf, "%s", pos[0]);
    cli_catch_stop_signals();
    rl_status st = run_batch_execute(&b, &o, &res, &err);
    run_batch_free(&b);
    if (cli_stop_signal) {
        int sig = cli_stop_signal;
        if (!st)
            fprintf(stderr,
                    "ropelab: stopped by %s: %zu run(s) complete (%zu passed, %zu failed, %zu "
                    "already complete), %zu not run; %s/results.csv and manifest.json hold the "
                    "complete runs. Resume with: ropelab run %s --out %s --resume\n",
                    sig == SIGINT ? "SIGINT" : "SIGTERM", res.passed + res.failed + res.skipped,
                    res.passed, res.failed, res.skipped, res.pending, out, file_buf, out);
        else
            cli_error("%s", err.msg);
        return 128 + sig; /* 130 for SIGINT, 143 for SIGTERM, as a shell reports them */
    }
    if (st) {
        cli_error("%s", err.msg);
        return CLI_EXIT_USAGE;
    }
    if (res.validation_messages)
        fprintf(stderr, "ropelab: warning: the validation layer reported %u message(s); see "
                        "manifest.json\n", res.validation_messages);
    printf("%zu run(s): %zu passed, %zu failed, %zu already complete%s; results in %s/results.csv\n",
           res.jobs, res.passed, res.failed, res.skipped,
           res.interrupted ? ", stopped early" : "", out);
    if (!no_plot) {
        plot_result pr;
        plot_options po = {.stop = &cli_stop_signal};
        if (plot_dir(out, &po, &pr, &err) == RL_OK)
            printf("plot: %zu figure%s; report: %s/report.md\n", pr.n_figures,
                   pr.n_figures == 1 ? "" : "s", out);
        else if (cli_stop_signal)
            cli_error("stopped by %s while plotting: results.csv and manifest.json are "
                      "complete, and so is every figure drawn; draw the rest with: ropelab "
                      "plot %s", cli_stop_signal == SIGINT ? "SIGINT" : "SIGTERM", out);
        else
            cli_error("results are complete, but plotting failed: %s", err.msg);
        if (cli_stop_signal)
            return 128 + cli_stop_signal;
    }
    return res.failed || res.interrupted ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}
