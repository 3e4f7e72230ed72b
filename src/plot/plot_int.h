/* plot_int.h — functions shared between the files of module plot (prefix
 * plot_); not part of its public API. Lowest layer first:
 *
 *   rl_csv.c      results.csv read into a table (RFC 4180)
 *   plot_view.c     the view: --where rows, --series / --facet / --aggregate
 *                   columns
 *   plot_group.c    rows grouped into figures (by metric) and series (by
 *                   run and device, then by configuration or --series),
 *                   series labels
 *   plot_gnuplot.c  a figure's .dat and .gp files, gnuplot run on them
 *   plot_report.c   report.md
 *   plot.c          plot_dir: the steps above in order */
#ifndef PLOT_INT_H
#define PLOT_INT_H

#include <stddef.h>

#include "core/rl_csv.h"
#include "core/rl_status.h"
#include "plot/plot.h"

/* results.csv is read with core/rl_csv.h (the one CSV reader). */

/* ---- plot_group.c ---------------------------------------------------------- */

/* The table and its known columns (-1: absent). */
typedef struct plot_ctx {
    const char *dir;
    const rl_csv *t;
    int c_run, c_dev, c_enc, c_metric, c_x, c_value, c_kind, c_status;
    int c_len, c_unit, c_title, c_xname, c_xunit, c_xtitle, c_plot, c_train;
    int *is_param;               /* [header columns] swept-parameter columns */
    int *is_seed;                /* [header columns] the seed: `seed`, or a swept `*.seed` */
    int *is_ident;               /* [header columns] what tells two runs' configurations apart
                                    apart from the seed: device, kind, encoding, type, factor,
                                    model shape, every swept key but a seed */
    /* The view (plot_options; plot_view.c). is_seed marks the aggregated
     * columns (the seed columns unless --aggregate names others; none with
     * "none"), is_ident the rest of the configuration. */
    const char *out;             /* where plots/ and report.md go; NULL: dir */
    int *is_series;              /* [header columns] --series columns; NULL: by configuration */
    int *in_label;               /* [header columns] may name a line in its legend (with the
                                    encoding): swept keys, the device, an unaveraged seed */
    int facet_col;               /* --facet column; -1: panels chosen beyond 10 lines */
    char agg_words[160];         /* what a line averages over, for captions: "seed" */
    char view[1200];             /* the view's options as given, for the report ("" none) */
} plot_ctx;

/* Where outputs go: c->out, or DIR. */
static inline const char *plot_out_dir(const plot_ctx *c)
{
    return c->out ? c->out : c->dir;
}

/* results.csv's `plot` column: core/rl_csv.h's RL_PLOT_* and their words. */
/* The flags named by a `plot` field (rl_plot_words_parse). */
static inline unsigned plot_flags(const char *words) { return rl_plot_words_parse(words); }

/* Is metric m (plot flags `flags`) a bound of a 95 % interval, X_lo95 or
 * X_hi95 with the word ci? Then *base_len is strlen(X) and *is_hi says
 * which bound. */
int plot_ci_bound(const char *m, unsigned flags, size_t *base_len, int *is_hi);

/* plot.c: the header's columns into c (the table must have the required
 * ones; path names the file in messages) and every row as wide as the
 * header; c->is_param is allocated (free it). */
rl_status plot_ctx_columns(plot_ctx *c, const char *path, rl_error *err);

/* A metric as a file name: letters, digits, '-' and '.' kept, others '_'. */
void plot_safe_name(const char *in, char *out, size_t cap);

/* ---- plot_view.c ----------------------------------------------------------- */

/* The view of opt on c (after plot_ctx_columns): --where rows dropped from
 * the table (*t, rows compacted; the header kept), is_seed / is_ident /
 * is_series / in_label / facet_col / agg_words set. RL_ERR_ARG naming the
 * option, the key or value and what the table has. */
rl_status plot_view_apply(plot_ctx *c, rl_csv *t, const plot_options *opt, rl_error *err);
void plot_view_free(plot_ctx *c);

/* The column KEY names (exactly, or a swept key by its name without its
 * section when only one column has it), or -1. */
int plot_view_col(const plot_ctx *c, const char *key);

/* Row row's field in column col ("" for an absent column). */
const char *plot_field(const plot_ctx *c, size_t row, int col);

/* One drawn point of a series: the value at x, or the mean over the
 * series' seeds there, with its 95 % interval. */
typedef struct plot_point {
    double x;                    /* numeric x (0 on a categorical axis) */
    const char *xs;              /* x as results.csv writes it */
    double y, lo, hi;            /* value (mean over seeds); interval bounds, NAN: none */
    size_t n;                    /* values averaged: seeds with a number at this x */
} plot_point;

/* How a point's interval was found (plot_series.ci). */
enum {
    PLOT_CI_ROWS = 1u << 0,      /* X_lo95 / X_hi95 rows of results.csv (one seed) */
    PLOT_CI_T = 1u << 1,         /* t-interval over 2..4 seeds */
    PLOT_CI_BOOT = 1u << 2,      /* percentile bootstrap over >= 5 seeds */
};

/* One line of a figure: the rows of one run on one device, or of the runs
 * that differ only in their seed (n_runs of them: drawn as their mean with
 * a 95 % interval band). */
typedef struct plot_series {
    const char *run_id;
    const char *device;          /* a run on several devices is one series per device */
    size_t first_row;            /* for labels: a row of this run */
    size_t *rows;
    size_t n, cap;
    size_t n_runs;               /* runs (seeds) merged into this series */
    plot_point *pt;              /* [n_pt] in x order (categorical: first appearance) */
    size_t n_pt;
    unsigned ci;                 /* PLOT_CI_*: where its points' intervals come from */
} plot_series;

/* One metric's rows that have an x value (at one context length when the
 * length is not the x axis itself). */
typedef struct plot_figure {
    const char *metric;
    const char *length;          /* "" or the context length of every row */
    char name[160];              /* file name: metric (and _n<length>), safe */
    plot_series *s;
    size_t n, cap;
    int is_ref;                  /* plot word "ref" (or a "<table>.ref_*" column): drawn in the
                                    table's other figures of the same unit */
    int categorical;             /* some x is not a number */
    unsigned flags;              /* PLOT_F_* */
    int constant;                /* every value the same: no figure, a sentence in the report */
    double constant_value;
    const char *title, *unit, *x_title, *x_unit;
    /* filled by plot_figure_render */
    int drawn;
    char caption[1600];
} plot_figure;

/* Groups the table's rows with an x into figures (*figs[*n_figs], in order
 * of first appearance; one per metric and length; free with
 * plot_figures_free, also after an error), and marks the constant ones. */
rl_status plot_group(const plot_ctx *c, plot_figure **figs, size_t *n_figs, rl_error *err);
void plot_figures_free(plot_figure *f, size_t n);

/* Do metrics a and b come from the same table (same text before the last
 * '.')? */
int plot_same_table(const char *a, const char *b);

/* Label of series si: its encoding, then every parameter (and the device)
 * whose value differs between the figure's series, but column skip (-1:
 * none; a facet's column or the encoding's, said in its panel's title;
 * the encoding stays when nothing else is left), a parameter the run
 * does not set (empty: no "(default)") and, for a mean over seeds, the
 * seed; the run id if that is empty. */
void plot_series_label(const plot_ctx *c, const plot_figure *fg, size_t si, int skip, char *out,
                       size_t cap);

/* A swept key without its section, which its name makes clear:
 * "max_len" for "params.max_len". */
const char *plot_key_name(const char *key);

/* ---- plot_gnuplot.c -------------------------------------------------------- */

/* Writes DIR/plots/<name>.dat and .gp for figure fg (figs[0..n_figs): the
 * reference curves of its table) and renders them with gnuplot prog into
 * <name>.png (and .svg), each renamed into place when complete; sets
 * fg->drawn and fg->caption. The .gp names only files beside it and
 * re-renders <name>.png/.svg when run there (`cd plots && gnuplot <name>.gp`);
 * ropelab passes temporary output names with -e. */
rl_status plot_figure_render(const plot_ctx *c, plot_figure *fg, const plot_figure *figs,
                             size_t n_figs, const char *prog, unsigned formats, rl_error *err);
/* Its first half: DIR/plots/<name>.dat and .gp only (DIR/plots must exist;
 * gnuplot is not run). The fuzz harness of results.csv goes through it. */
rl_status plot_figure_write(const plot_ctx *c, plot_figure *fg, const plot_figure *figs,
                            size_t n_figs, unsigned formats, rl_error *err);

/* ---- plot_report.c --------------------------------------------------------- */

/* Writes DIR/report.md: runs with their status (DIR/manifest.json when
 * present), the figures, verification records, scalar rows; fills
 * res->n_runs and res->n_scalars. */
rl_status plot_report_write(const plot_ctx *c, const plot_figure *figs, size_t n_figs,
                            unsigned formats, plot_result *res, rl_error *err);

#endif
