/* plot.c — plot_dir: results.csv read and checked, its rows grouped into
 * figures, each figure rendered by gnuplot, then report.md. */
#include "plot/plot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/rl_util.h"
#include "plot/plot_int.h"

int plot_find_program(const char *name, char *out, size_t cap)
{
    if (strchr(name, '/')) {
        if (access(name, X_OK) == 0) {
            snprintf(out, cap, "%s", name);
            return 1;
        }
        return 0;
    }
    const char *path = getenv("PATH");
    if (!path)
        path = "/usr/bin:/bin";
    while (*path) {
        const char *c = strchr(path, ':');
        size_t n = c ? (size_t)(c - path) : strlen(path);
        snprintf(out, cap, "%.*s/%s", (int)n, path, name);
        if (n && access(out, X_OK) == 0)
            return 1;
        path += n + (c ? 1 : 0);
    }
    return 0;
}

/* The header's columns into c (the table must have the required ones), and
 * every row as wide as the header. */
static rl_status check_columns(plot_ctx *c, const char *path, rl_error *err)
{
    const plot_csv *t = c->t;
    if (t->n == 0)
        return rl_fail(err, RL_ERR_PARSE, "%s: empty file (no header)", path);
    const plot_csv_row *h = &t->rows[0];
    static const char *const required[] = {"run_id", "encoding", "metric", "x", "value"};
    for (size_t i = 0; i < RL_ARRAY_LEN(required); i++)
        if (plot_csv_col(h, required[i]) < 0)
            return rl_fail(err, RL_ERR_PARSE, "%s:1: missing column '%s' (the header needs %s)",
                           path, required[i], "run_id, encoding, metric, x, value");
    c->c_run = plot_csv_col(h, "run_id");
    c->c_dev = plot_csv_col(h, "device");
    c->c_enc = plot_csv_col(h, "encoding");
    c->c_metric = plot_csv_col(h, "metric");
    c->c_x = plot_csv_col(h, "x");
    c->c_value = plot_csv_col(h, "value");
    c->c_xl = plot_csv_col(h, "x_label");
    c->c_yl = plot_csv_col(h, "y_label");
    c->c_kind = plot_csv_col(h, "kind");
    c->c_status = plot_csv_col(h, "status");
    c->is_param = calloc(h->n, sizeof *c->is_param);
    if (!c->is_param)
        return rl_fail(err, RL_ERR_NOMEM, "out of memory");
    for (size_t col = 0; col < h->n; col++) {
        int k = (int)col;
        c->is_param[col] = k != c->c_run && k != c->c_dev && k != c->c_enc && k != c->c_metric &&
                           k != c->c_x && k != c->c_value && k != c->c_xl && k != c->c_yl &&
                           k != c->c_kind && k != c->c_status;
    }
    for (size_t r = 1; r < t->n; r++)
        if (t->rows[r].n != h->n)
            return rl_fail(err, RL_ERR_PARSE, "%s:%zu: %zu fields, the header has %zu", path,
                           t->rows[r].line, t->rows[r].n, h->n);
    return RL_OK;
}

/* gnuplot (opt->gnuplot or on PATH) into prog, and DIR/plots. */
static rl_status prepare_gnuplot(const char *dir, const plot_options *o, char *prog, size_t cap,
                                 rl_error *err)
{
    const char *want = o->gnuplot ? o->gnuplot : "gnuplot";
    if (!plot_find_program(want, prog, cap))
        return rl_fail(err, RL_ERR_UNSUPPORTED,
                       "gnuplot not found (looked for '%s'); install it with "
                       "`apt-get install gnuplot-nox`, or pass --no-plot to `ropelab run`",
                       want);
    char pd[1100];
    snprintf(pd, sizeof pd, "%s/plots", dir);
    if (mkdir(pd, 0777) != 0 && errno != EEXIST)
        return rl_fail(err, RL_ERR_IO, "%s: cannot create: %s", pd, strerror(errno));
    return RL_OK;
}

rl_status plot_dir(const char *dir, const plot_options *opt, plot_result *res, rl_error *err)
{
    plot_options o = opt ? *opt : (plot_options){0};
    plot_result dummy;
    if (!res)
        res = &dummy;
    memset(res, 0, sizeof *res);
    char path[1100];
    snprintf(path, sizeof path, "%s/results.csv", dir);
    plot_csv t;
    plot_ctx c = {.dir = dir, .t = &t};
    plot_figure *figs = NULL;
    size_t n_figs = 0;
    char prog[1024] = "";
    rl_status st = plot_csv_read(path, &t, err);
    if (!st)
        st = check_columns(&c, path, err);
    if (!st)
        st = plot_group(&c, &figs, &n_figs, err);
    if (!st && n_figs)
        st = prepare_gnuplot(dir, &o, prog, sizeof prog, err);
    for (size_t i = 0; i < n_figs && !st; i++) {
        if (figs[i].is_ref)
            continue; /* drawn inside its table's figures */
        st = plot_figure_render(&c, &figs[i], figs, n_figs, prog, !o.no_svg, err);
        if (!st)
            res->n_figures++;
    }
    if (!st)
        st = plot_report_write(&c, figs, n_figs, !o.no_svg, res, err);
    plot_figures_free(figs, n_figs);
    free(c.is_param);
    plot_csv_free(&t);
    return st;
}
