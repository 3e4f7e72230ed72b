/* libFuzzer harness for the results.csv reader behind `ropelab plot` (and
 * the tables `merge` combines) and everything it writes from it: RFC 4180
 * parsing, column checks, grouping into figures and series (seeds merged,
 * intervals found), series labels, each figure's gnuplot data file and
 * script (plot_figure_write: the user strings that reach gnuplot's input),
 * and report.md (the user strings that reach Markdown) — everything but the
 * gnuplot run itself. Files go to one per-process directory, emptied per
 * input and removed at exit. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/rl_fs.h"
#include "plot/plot_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char fz_dir[64], fz_plots[96], fz_csv[96];

/* The formats a script is written for, chosen by the input's length. */
static unsigned fz_formats(size_t size)
{
    static const unsigned f[] = {PLOT_FMT_PNG, PLOT_FMT_PNG | PLOT_FMT_SVG,
                                 PLOT_FMT_PDF, PLOT_FMT_PNG | PLOT_FMT_SVG | PLOT_FMT_PDF};
    return f[size & 3];
}

static void fz_cleanup(void)
{
    rl_fs_remove("/tmp", fz_dir, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1 << 16)
        return 0;
    if (!fz_dir[0]) {
        snprintf(fz_dir, sizeof fz_dir, "/tmp/rl_fuzz_results_%ld", (long)getpid());
        snprintf(fz_plots, sizeof fz_plots, "%s/plots", fz_dir);
        snprintf(fz_csv, sizeof fz_csv, "%s/results.csv", fz_dir);
        atexit(fz_cleanup);
    }
    fz_cleanup();
    if (mkdir(fz_dir, 0777) != 0 || mkdir(fz_plots, 0777) != 0)
        abort(); /* the harness cannot work at all: not a finding in the code */
    FILE *f = fopen(fz_csv, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        abort();
    rl_csv t = {0};
    rl_error err = {0};
    plot_ctx c = {.dir = fz_dir, .t = &t};
    plot_figure *figs = NULL;
    size_t n_figs = 0;
    if (rl_csv_read(fz_csv, &t, &err) == RL_OK && plot_ctx_columns(&c, fz_csv, &err) == RL_OK &&
        plot_group(&c, &figs, &n_figs, &err) == RL_OK) {
        char label[512];
        for (size_t i = 0; i < n_figs; i++) {
            for (size_t s = 0; s < figs[i].n; s++)
                plot_series_label(&c, &figs[i], s, -1, label, sizeof label);
            if (!figs[i].is_ref && !figs[i].constant && !(figs[i].flags & RL_PLOT_HIDE) &&
                plot_figure_write(&c, &figs[i], figs, n_figs, fz_formats(size), &err) == RL_OK)
                figs[i].drawn = 1; /* as if gnuplot had drawn it: the report lists it */
        }
        plot_result res;
        (void)plot_report_write(&c, figs, n_figs, fz_formats(size), &res, &err);
    }
    plot_figures_free(figs, n_figs);
    free(c.is_param);
    free(c.is_seed);
    free(c.is_ident);
    rl_csv_free(&t);
    return 0;
}
