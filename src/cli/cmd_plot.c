/* ropelab plot DIR [--format F] [--where K=V]... [--series K] [--facet K] [--aggregate K] [--out D] */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "core/rl_util.h"
#include "plot/plot.h"

/* "png,svg,pdf" into PLOT_FMT_* flags; 0 after an error (printed). */
static unsigned parse_formats(const char *s)
{
    static const struct {
        const char *name;
        unsigned flag;
    } known[] = {{"png", PLOT_FMT_PNG}, {"svg", PLOT_FMT_SVG}, {"pdf", PLOT_FMT_PDF}};
    unsigned f = 0;
    for (const char *p = s;; p++) {
        size_t n = strcspn(p, ","), k = 0;
        while (k < RL_ARRAY_LEN(known) &&
               !(strlen(known[k].name) == n && strncmp(p, known[k].name, n) == 0))
            k++;
        if (k == RL_ARRAY_LEN(known)) {
            cli_error("plot --format '%s': '%.*s' is not a format (png, svg, pdf, "
                      "comma-separated)", s, (int)n, p);
            return 0;
        }
        f |= known[k].flag;
        p += n;
        if (!*p)
            return f;
    }
}

int cmd_plot(int argc, char **argv)
{
    int no_svg = 0;
    const char *gnuplot = NULL, *format = NULL, *series = NULL, *facet = NULL,
               *aggregate = NULL, *out = NULL;
    cli_strs where = {0};
    const cli_opt opts[] = {
        {"--format", CLI_STR, &format, "LIST",
         "figure formats, comma-separated: png, svg, pdf (default png,svg)"},
        {"--no-svg", CLI_FLAG, &no_svg, NULL, "write PNG figures only (--format png)"},
        {"--where", CLI_STRS, &where, "KEY=V[,V...]",
         "only the rows whose column KEY is one of the values (repeatable: every condition "
         "holds); KEY is a results.csv column, or a swept key without its section"},
        {"--series", CLI_STR, &series, "KEY[,KEY...]",
         "one line per value of these columns (default: one per configuration); the runs of a "
         "line may differ only in what --aggregate averages"},
        {"--facet", CLI_STR, &facet, "KEY",
         "one panel per value of KEY, at most 16 (default: panels only beyond 10 lines)"},
        {"--aggregate", CLI_STR, &aggregate, "KEY[,KEY...]|none",
         "runs differing only in these columns are one line, their mean with a 95 % band "
         "(default: the seed; none: a line per run)"},
        {"--out", CLI_STR, &out, "DIR",
         "write plots/ and report.md there (made if missing) instead of into the results "
         "directory"},
        {"--gnuplot", CLI_STR, &gnuplot, "PATH", "gnuplot program to run (default: gnuplot on PATH)"},
    };
    const char *pos[1];
    int n_pos = 0;
    int rc = cli_parse("ropelab plot DIR [--format png,svg,pdf] [--where KEY=V]... [--series KEY] "
                       "[--facet KEY] [--aggregate KEY|none] [--out DIR]",
                       "Renders every metric of DIR/results.csv that has an x axis as\n"
                       "DIR/plots/<metric>.png and .svg (and .pdf) with gnuplot: one line per\n"
                       "configuration, labelled by encoding and the parameters that differ, a\n"
                       "colour per encoding and a dash per variant; runs differing only in seed\n"
                       "(or in what --aggregate names) as their mean with a 95 % band; X_lo95/X_hi95\n"
                       "rows as X's band; panels beyond 10 lines or by --facet; log scales where\n"
                       "the data span decades. Writes DIR/report.md embedding the figures with\n"
                       "each run's status and scalar figures (summaries and verification errors).\n"
                       "--where selects rows first; the report names the view.",
                       argc, argv, opts, RL_ARRAY_LEN(opts), pos, 1, &n_pos);
    if (rc >= 0)
        return rc;
    if (n_pos != 1) {
        cli_error("plot: name the results directory: `ropelab plot DIR`");
        return CLI_EXIT_USAGE;
    }
    unsigned formats = 0;
    if (format && !(formats = parse_formats(format)))
        return CLI_EXIT_USAGE;
    if (format && no_svg) {
        cli_error("plot: give --format or --no-svg, not both");
        return CLI_EXIT_USAGE;
    }
    plot_options o = {.gnuplot = gnuplot, .no_svg = no_svg, .formats = formats,
                      .series = series, .facet = facet, .aggregate = aggregate, .out = out,
                      .stop = &cli_stop_signal};
    for (size_t i = 0; i < where.n && i < PLOT_MAX_WHERE; i++)
        o.where[o.n_where++] = where.v[i];
    cli_catch_stop_signals();
    plot_result r;
    rl_error err = {0};
    const char *dest = out ? out : pos[0];
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
           r.n_scalars == 1 ? "" : "s", dest);
    return CLI_EXIT_OK;
}
