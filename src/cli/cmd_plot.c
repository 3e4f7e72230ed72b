/* ropelab plot DIR [--no-svg] */
#include <stdio.h>

#include "cli/cli.h"
#include "core/rl_util.h"
#include "plot/plot.h"

int cmd_plot(int argc, char **argv)
{
    int no_svg = 0;
    const char *gnuplot = NULL;
    const cli_opt opts[] = {
        {"--no-svg", CLI_FLAG, &no_svg, NULL, "write PNG figures only"},
        {"--gnuplot", CLI_STR, &gnuplot, "PATH", "gnuplot program to run (default: gnuplot on PATH)"},
    };
    const char *pos[1];
    int n_pos = 0;
    int rc = cli_parse("ropelab plot DIR [--no-svg]",
                       "Renders every metric of DIR/results.csv that has an x axis as DIR/plots/<metric>.png\n"
                       "and .svg with gnuplot (one line per run, labelled by encoding and the parameters\n"
                       "that differ; runs differing only in seed as their mean with a 95 % band;\n"
                       "X_lo95/X_hi95 rows as X's band; panels beyond 10 lines; log scales where the\n"
                       "data span decades), and writes DIR/report.md\n"
                       "embedding the figures with each run's status and scalar figures (summaries and\n"
                       "verification errors).",
                       argc, argv, opts, RL_ARRAY_LEN(opts), pos, 1, &n_pos);
    if (rc >= 0)
        return rc;
    if (n_pos != 1) {
        cli_error("plot: name the results directory: `ropelab plot DIR`");
        return CLI_EXIT_USAGE;
    }
    plot_options o = {.gnuplot = gnuplot, .no_svg = no_svg, .stop = &cli_stop_signal};
    cli_catch_stop_signals();
    plot_result r;
    rl_error err = {0};
    if (plot_dir(pos[0], &o, &r, &err) != RL_OK) {
        if (cli_stop_signal) {
            cli_error("stopped by %s: %zu figure(s) drawn, each complete; report.md not "
                      "written (run `ropelab plot %s` again)",
                      cli_stop_signal == SIGINT ? "SIGINT" : "SIGTERM", r.n_figures, pos[0]);
            return 128 + cli_stop_signal;
        }
        cli_error("%s", err.msg);
        return CLI_EXIT_USAGE;
    }
    printf("plot: %zu figure%s for %zu run%s, %zu scalar figure%s; report: %s/report.md\n",
           r.n_figures, r.n_figures == 1 ? "" : "s", r.n_runs, r.n_runs == 1 ? "" : "s", r.n_scalars,
           r.n_scalars == 1 ? "" : "s", pos[0]);
    return CLI_EXIT_OK;
}
