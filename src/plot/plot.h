/* plot.h — figures and report of a results directory (prefix plot_).
 *
 * Reads DIR/results.csv (the runner's tidy long format, docs/runner.md
 * "results.csv": run_id, device, kind, status, encoding, type, factor, model
 * shape, seed, one column per swept parameter, metric, length, x, value,
 * unit, title, x_name, x_unit, x_title, plot), draws one figure per metric
 * (and context length, when that is not the x axis) that has x values — one
 * line per run, labelled by its encoding and whatever parameters differ
 * between the runs, axes and reference marks as the `plot` words say — as
 * PNG and SVG with gnuplot, and writes DIR/report.md: runs and their status
 * (DIR/manifest.json when present), each run's resolved parameters, the
 * figures with captions, verification records, and per kind an encoding x
 * metric table of the scalar figures (rows whose x is empty). A results.csv
 * in the format before (x_label/y_label, no unit column) is refused,
 * naming how to rewrite it. Every output is written under a temporary name
 * and renamed when complete. */
#ifndef PLOT_H
#define PLOT_H

#include <stddef.h>

#include <signal.h>

#include "core/rl_status.h"

typedef struct plot_options {
    const char *gnuplot;   /* program to run; NULL: "gnuplot" found on PATH */
    int no_svg;            /* 1: PNG only */
    volatile sig_atomic_t *stop; /* set by a signal handler: stop before the next figure
                                    (the drawn ones complete), RL_ERR_IO; NULL: never */
} plot_options;

typedef struct plot_result {
    size_t n_figures;      /* figures written (each as .png and .svg) */
    size_t n_runs;         /* distinct run ids seen */
    size_t n_scalars;      /* scalar rows put in the report table */
} plot_result;

/* Renders DIR's results. RL_ERR_IO for a missing/unreadable results.csv,
 * RL_ERR_PARSE for a malformed one (message names file, line and column),
 * RL_ERR_UNSUPPORTED when gnuplot is not installed (message says how to
 * install it). */
rl_status plot_dir(const char *dir, const plot_options *opt, plot_result *res, rl_error *err);

/* Finds an executable by name on PATH (or checks a path containing '/').
 * Returns 1 and fills out when found. */
int plot_find_program(const char *name, char *out, size_t cap);

#endif
