/* plot.c — plot_dir: results.csv read and checked, its rows grouped into
 * figures, each figure rendered by gnuplot, then report.md. */
#include "plot/plot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/rl_fs.h"
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

rl_status plot_ctx_columns(plot_ctx *c, const char *path, rl_error *err)
{
    const rl_csv *t = c->t;
    if (t->n == 0)
        return rl_fail(err, RL_ERR_PARSE, "%s: empty file (no header)", path);
    const rl_csv_row *h = &t->rows[0];
    static const char *const required[] = {"run_id", "encoding", "metric", "x", "value", "unit"};
    if (rl_csv_col(h, "unit") < 0 && rl_csv_col(h, "x_label") >= 0)
        return rl_fail(err, RL_ERR_PARSE,
                       "%s:1: results.csv in the old format (x_label/y_label, no unit, length or "
                       "title columns) is not read any more; rewrite it in the tidy format from "
                       "its run directories with `ropelab merge %s --out NEWDIR` (or re-run the "
                       "batch into the same output: finished runs are kept)",
                       path, c->dir);
    for (size_t i = 0; i < RL_ARRAY_LEN(required); i++)
        if (rl_csv_col(h, required[i]) < 0)
            return rl_fail(err, RL_ERR_PARSE, "%s:1: missing column '%s' (the header needs %s)",
                           path, required[i], "run_id, encoding, metric, x, value, unit");
    c->c_run = rl_csv_col(h, "run_id");
    c->c_dev = rl_csv_col(h, "device");
    c->c_enc = rl_csv_col(h, "encoding");
    c->c_metric = rl_csv_col(h, "metric");
    c->c_x = rl_csv_col(h, "x");
    c->c_value = rl_csv_col(h, "value");
    c->c_kind = rl_csv_col(h, "kind");
    c->c_status = rl_csv_col(h, "status");
    c->c_len = rl_csv_col(h, "length");
    c->c_unit = rl_csv_col(h, "unit");
    c->c_title = rl_csv_col(h, "title");
    c->c_xname = rl_csv_col(h, "x_name");
    c->c_xunit = rl_csv_col(h, "x_unit");
    c->c_xtitle = rl_csv_col(h, "x_title");
    c->c_plot = rl_csv_col(h, "plot");
    c->c_train = rl_csv_col(h, "train_len");
    c->facet_col = -1; /* plot_view_apply sets the view */
    /* every column the result format defines; the others are swept keys */
    static const char *const fixed[] = {
        "run_id", "device", "kind",  "status", "encoding", "type",   "factor", "head_dim",
        "heads",  "kv_heads", "train_len", "seed", "metric", "length", "x",  "value",
        "unit",   "title",  "x_name", "x_unit", "x_title", "plot"};
    /* a configuration: what tells runs apart, but their seed */
    static const char *const ident[] = {"device", "kind",    "encoding", "type",     "factor",
                                        "head_dim", "heads", "kv_heads", "train_len"};
    c->is_param = calloc(h->n, sizeof *c->is_param);
    c->is_seed = calloc(h->n, sizeof *c->is_seed);
    c->is_ident = calloc(h->n, sizeof *c->is_ident);
    if (!c->is_param || !c->is_seed || !c->is_ident)
        return rl_fail(err, RL_ERR_NOMEM, "out of memory");
    for (size_t col = 0; col < h->n; col++) {
        const char *name = h->f[col];
        c->is_param[col] = 1;
        for (size_t i = 0; i < RL_ARRAY_LEN(fixed); i++)
            if (strcmp(name, fixed[i]) == 0)
                c->is_param[col] = 0;
        /* `seed`, or a swept seed of a section: `data.seed` */
        const char *dot = strrchr(name, '.');
        c->is_seed[col] = strcmp(name, "seed") == 0 ||
                          (c->is_param[col] && dot && strcmp(dot + 1, "seed") == 0);
        c->is_ident[col] = c->is_param[col] && !c->is_seed[col];
        for (size_t i = 0; i < RL_ARRAY_LEN(ident); i++)
            if (strcmp(name, ident[i]) == 0)
                c->is_ident[col] = 1;
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
    return rl_fs_mkdirs(dir, pd, err);
}

/* --out: the folder made when missing (its parent must exist), never
 * through a link: a link there is refused before anything is written. */
static rl_status prepare_out(const char *out, rl_error *err)
{
    if (strlen(out) > 900)
        return rl_fail(err, RL_ERR_LIMIT, "plot --out %s: the path is %zu bytes; ropelab writes "
                       "into folders of at most 900", out, strlen(out));
    if (mkdir(out, 0777) != 0 && errno != EEXIST)
        return rl_fail(err, RL_ERR_IO, "plot --out %s: cannot create the folder: %s", out,
                       strerror(errno));
    struct stat sb;
    if (lstat(out, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return rl_fail(err, RL_ERR_ARG, "plot --out %s: not a folder (a link or a file is "
                       "there; ropelab writes only into a folder it does not reach through a "
                       "link)", out);
    return rl_fs_no_links(out, 3, err);
}

/* What a killed plot left: report.md.tmp.<pid> and plots/<name>.tmp.<pid>
 * (figures, data files and scripts being written). Under the lock. */
static rl_status clean_own_tmp(const char *dir, rl_error *err)
{
    static const char *const report[] = {"report.md.tmp."};
    char pd[1100];
    snprintf(pd, sizeof pd, "%s/plots", dir);
    rl_status st = rl_fs_clean_tmp(dir, dir, report, 1, NULL, err);
    return st ? st : rl_fs_clean_tmp(dir, pd, NULL, 0, NULL, err);
}

rl_status plot_dir(const char *dir, const plot_options *opt, plot_result *res, rl_error *err)
{
    plot_options o = opt ? *opt : (plot_options){0};
    unsigned formats = o.formats ? o.formats
                                 : o.no_svg ? PLOT_FMT_PNG : PLOT_FMT_PNG | PLOT_FMT_SVG;
    const char *out = o.out ? o.out : dir;
    plot_result dummy;
    if (!res)
        res = &dummy;
    memset(res, 0, sizeof *res);
    char path[1100];
    snprintf(path, sizeof path, "%s/results.csv", dir);
    rl_csv t = {0};
    plot_ctx c = {.dir = dir, .t = &t};
    plot_figure *figs = NULL;
    size_t n_figs = 0;
    char prog[1024] = "";
    /* a results folder from someone else: a link anywhere in it is refused
     * before anything is read or written (and every write below reaches its
     * file without following one) */
    rl_status st = strlen(dir) > 900 ? rl_fail(err, RL_ERR_LIMIT, "%s: the path is %zu bytes; "
                                                "ropelab plots folders of at most 900", dir,
                                                strlen(dir))
                                     : rl_fs_no_links(dir, 3, err);
    if (!st)
        st = rl_csv_read(path, &t, err);
    if (!st)
        st = plot_ctx_columns(&c, path, err);
    if (!st)
        st = plot_view_apply(&c, &t, &o, err);
    if (!st)
        st = plot_group(&c, &figs, &n_figs, err);
    if (!st && o.out)
        st = prepare_out(o.out, err);
    /* before the first write, the folder's lock, as run and merge take it;
     * holding it, every temporary of ours there (plots/<name>.tmp.<pid>,
     * report.md.tmp.<pid>) is a killed plot's, whatever pid it names:
     * removed (a link so named unlinked, never followed) */
    int lock = -1;
    if (!st)
        st = rl_fs_lock(out, &lock, err);
    if (!st)
        st = clean_own_tmp(out, err);
    if (!st && n_figs)
        st = prepare_gnuplot(out, &o, prog, sizeof prog, err);
    for (size_t i = 0; i < n_figs && !st; i++) {
        if (o.stop && *o.stop) {
            st = rl_fail(err, RL_ERR_IO, "stopped by a signal after %zu figure(s)",
                         res->n_figures);
            break;
        }
        if (figs[i].is_ref || figs[i].constant || (figs[i].flags & RL_PLOT_HIDE))
            continue; /* drawn inside its table's figures, or said in the report */
        st = plot_figure_render(&c, &figs[i], figs, n_figs, prog, formats, err);
        if (!st)
            res->n_figures++;
    }
    if (!st && o.stop && *o.stop)
        st = rl_fail(err, RL_ERR_IO, "stopped by a signal after %zu figure(s)", res->n_figures);
    if (!st)
        st = plot_report_write(&c, figs, n_figs, formats, res, err);
    rl_fs_unlock(lock);
    plot_figures_free(figs, n_figs);
    free(c.is_param);
    free(c.is_seed);
    free(c.is_ident);
    plot_view_free(&c);
    rl_csv_free(&t);
    return st;
}
