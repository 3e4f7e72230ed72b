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

/* Figure formats (plot_options.formats). */
enum { PLOT_FMT_PNG = 1u << 0, PLOT_FMT_SVG = 1u << 1, PLOT_FMT_PDF = 1u << 2 };

/* Most --where conditions, --series and --aggregate columns. */
#define PLOT_MAX_WHERE 16
#define PLOT_MAX_KEYS 8

typedef struct plot_options {
    const char *gnuplot;   /* program to run; NULL: "gnuplot" found on PATH */
    int no_svg;            /* 1: PNG only (formats 0) */
    unsigned formats;      /* PLOT_FMT_*; 0: PNG and SVG (PNG only with no_svg) */
    /* The view (docs/runner.md "Plots"); a KEY is a results.csv column,
     * or a swept key without its section ("factor", "max_len") when one
     * column has that name: */
    const char *where[PLOT_MAX_WHERE]; /* "KEY=V1[,V2...]": only rows whose KEY is one of
                                          the values (every condition holds) */
    size_t n_where;
    const char *series;    /* "KEY[,KEY...]": one line per value of these columns (runs of a
                              line may differ only in what is aggregated); NULL: one line per
                              configuration */
    const char *facet;     /* "KEY": one panel per value (at most 16); NULL: panels only
                              beyond 10 lines */
    const char *aggregate; /* "KEY[,KEY...]": runs differing only in these are one line, their
                              mean with a 95 % band; "none": never; NULL: the seed columns */
    const char *out;       /* folder of plots/ and report.md; NULL: DIR (results.csv, the
                              manifest and the runs are always read from DIR) */
    volatile sig_atomic_t *stop; /* set by a signal handler: stop before the next figure
                                    (the drawn ones complete), RL_ERR_IO; NULL: never */
} plot_options;

typedef struct plot_result {
    size_t n_figures;      /* figures written (each in every format asked for) */
    size_t n_runs;         /* distinct run ids seen */
    size_t n_scalars;      /* scalar rows put in the report table */
} plot_result;

/* Renders DIR's results. RL_ERR_IO for a missing/unreadable results.csv,
 * RL_ERR_PARSE for a malformed one (message names file, line and column),
 * RL_ERR_ARG for a view the table cannot give (an unknown column or value,
 * a line whose runs differ in a column neither a series, facet nor
 * aggregate key: the message names the column and two runs),
 * RL_ERR_UNSUPPORTED when gnuplot is not installed (message says how to
 * install it). */
rl_status plot_dir(const char *dir, const plot_options *opt, plot_result *res, rl_error *err);

/* Finds an executable by name on PATH (or checks a path containing '/').
 * Returns 1 and fills out when found. */
int plot_find_program(const char *name, char *out, size_t cap);

#endif
