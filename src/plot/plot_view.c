/* plot_view.c — what `ropelab plot` is asked to show: --where keeps the
 * rows whose columns hold the values named, --aggregate chooses the
 * columns a line averages over (the seeds unless told otherwise), --series
 * the columns that tell lines apart, --facet the column of the panels.
 * Everything named is checked against the table first: an unknown column
 * or a value no row has is refused, naming what the table holds. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_util.h"
#include "plot/plot_int.h"

/* Columns a view may name: a run's configuration or its seed, and the
 * result's own fixed columns for --where (kind, status, metric, ...). */
static int is_config_col(const plot_ctx *c, int col)
{
    return c->is_ident[col] || c->is_seed[col] || c->is_param[col];
}

int plot_view_col(const plot_ctx *c, const char *key)
{
    const rl_csv_row *h = &c->t->rows[0];
    for (size_t col = 0; col < h->n; col++)
        if (strcmp(h->f[col], key) == 0)
            return (int)col;
    int found = -1;
    for (size_t col = 0; col < h->n; col++)
        if (c->is_param[col] && strcmp(plot_key_name(h->f[col]), key) == 0) {
            if (found >= 0)
                return -1; /* two sections have it: the full name is needed */
            found = (int)col;
        }
    return found;
}

/* "columns: a, b, ..." of the configuration (what --series, --facet and
 * --aggregate take). */
static void config_cols(const plot_ctx *c, char *out, size_t cap)
{
    const rl_csv_row *h = &c->t->rows[0];
    size_t len = 0;
    out[0] = '\0';
    for (size_t col = 0; col < h->n && len < cap; col++)
        if (is_config_col(c, (int)col))
            len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? ", " : "", h->f[col]);
}

static rl_status unknown_col(const plot_ctx *c, const char *opt, const char *key, rl_error *err)
{
    char cols[700];
    config_cols(c, cols, sizeof cols);
    return rl_fail(err, RL_ERR_ARG, "plot %s: %s/results.csv has no column '%s' (a run's "
                   "configuration is in: %s)", opt, c->dir, key, cols);
}

/* The distinct values of column col among the table's rows, for messages. */
static void values_of(const plot_ctx *c, int col, char *out, size_t cap)
{
    size_t len = 0, shown = 0;
    out[0] = '\0';
    for (size_t r = 1; r < c->t->n && len < cap; r++) {
        const char *v = plot_field(c, r, col);
        int seen = 0;
        for (size_t q = 1; q < r && !seen; q++)
            seen = strcmp(plot_field(c, q, col), v) == 0;
        if (seen)
            continue;
        if (shown++ == 12) {
            snprintf(out + len, cap - len, ", ...");
            return;
        }
        len += (size_t)snprintf(out + len, cap - len, "%s%s", len ? ", " : "", *v ? v : "(empty)");
    }
}

/* A comma list of columns into mark[] (set to 1); opt names the option in
 * messages. */
static rl_status mark_cols(const plot_ctx *c, const char *opt, const char *list, int *mark,
                           rl_error *err)
{
    char key[256];
    size_t n = 0;
    for (const char *p = list;; p++) {
        size_t k = strcspn(p, ",");
        if (k == 0 || k >= sizeof key)
            return rl_fail(err, RL_ERR_ARG, "plot %s '%s': expected KEY[,KEY...] (column names "
                           "of results.csv)", opt, list);
        memcpy(key, p, k);
        key[k] = '\0';
        int col = plot_view_col(c, key);
        if (col < 0 || !is_config_col(c, col))
            return unknown_col(c, opt, key, err);
        if (++n > PLOT_MAX_KEYS)
            return rl_fail(err, RL_ERR_ARG, "plot %s '%s': at most %d columns", opt, list,
                           PLOT_MAX_KEYS);
        mark[col] = 1;
        p += k;
        if (!*p)
            return RL_OK;
    }
}

/* Does v equal one of the comma-separated values of list? */
static int one_of(const char *v, const char *list)
{
    size_t n = strlen(v);
    for (const char *p = list;; p++) {
        size_t k = strcspn(p, ",");
        if (k == n && strncmp(p, v, n) == 0)
            return 1;
        p += k;
        if (!*p)
            return 0;
    }
}

/* --where KEY=V1[,V2...]: checked (every value some row holds), then the
 * rows that fail any condition dropped. */
static rl_status apply_where(plot_ctx *c, rl_csv *t, const plot_options *o, rl_error *err)
{
    int cols[PLOT_MAX_WHERE];
    const char *vals[PLOT_MAX_WHERE];
    for (size_t i = 0; i < o->n_where; i++) {
        const char *w = o->where[i], *eq = strchr(w, '=');
        char key[256];
        if (!eq || eq == w || (size_t)(eq - w) >= sizeof key || !eq[1])
            return rl_fail(err, RL_ERR_ARG, "plot --where '%s': expected KEY=VALUE[,VALUE...]", w);
        memcpy(key, w, (size_t)(eq - w));
        key[eq - w] = '\0';
        cols[i] = plot_view_col(c, key);
        if (cols[i] < 0) {
            const rl_csv_row *h = &t->rows[0];
            char all[900];
            size_t len = 0;
            all[0] = '\0';
            for (size_t col = 0; col < h->n && len < sizeof all; col++)
                len += (size_t)snprintf(all + len, sizeof all - len, "%s%s", len ? ", " : "",
                                        h->f[col]);
            return rl_fail(err, RL_ERR_ARG, "plot --where '%s': %s/results.csv has no column "
                           "'%s' (columns: %s)", w, c->dir, key, all);
        }
        vals[i] = eq + 1;
        /* each value named is one some row has: a misspelt one is not a
         * silently empty selection */
        for (const char *p = vals[i];; p++) {
            size_t k = strcspn(p, ",");
            int found = 0;
            for (size_t r = 1; r < t->n && !found; r++) {
                const char *v = plot_field(c, r, cols[i]);
                found = strlen(v) == k && strncmp(v, p, k) == 0;
            }
            if (!found) {
                char have[700];
                values_of(c, cols[i], have, sizeof have);
                return rl_fail(err, RL_ERR_ARG, "plot --where '%s': no row of %s/results.csv has "
                               "%s = '%.*s' (its values: %s)", w, c->dir, t->rows[0].f[cols[i]],
                               (int)k, p, have);
            }
            p += k;
            if (!*p)
                break;
        }
    }
    size_t kept = 1;
    for (size_t r = 1; r < t->n; r++) {
        int ok = 1;
        for (size_t i = 0; i < o->n_where && ok; i++)
            ok = one_of(plot_field(c, r, cols[i]), vals[i]);
        if (ok)
            t->rows[kept++] = t->rows[r];
        else
            free(t->rows[r].f); /* its fields point into t->text, which stays */
    }
    t->n = kept;
    if (kept == 1)
        return rl_fail(err, RL_ERR_ARG, "plot: no row of %s/results.csv meets every --where "
                       "condition together", c->dir);
    return RL_OK;
}

static void view_words(plot_ctx *c, const plot_options *o)
{
    size_t len = 0, cap = sizeof c->view;
    c->view[0] = '\0';
    for (size_t i = 0; i < o->n_where && len < cap; i++)
        len += (size_t)snprintf(c->view + len, cap - len, "%s--where %s", len ? " " : "",
                                o->where[i]);
    const char *const names[] = {"--series", "--facet", "--aggregate"};
    const char *const vals[] = {o->series, o->facet, o->aggregate};
    for (size_t i = 0; i < 3 && len < cap; i++)
        if (vals[i])
            len += (size_t)snprintf(c->view + len, cap - len, "%s%s %s", len ? " " : "",
                                    names[i], vals[i]);
}

rl_status plot_view_apply(plot_ctx *c, rl_csv *t, const plot_options *o, rl_error *err)
{
    const rl_csv_row *h = &t->rows[0];
    size_t nc = h->n;
    c->facet_col = -1;
    c->out = o->out;
    snprintf(c->agg_words, sizeof c->agg_words, "seed");
    c->in_label = calloc(nc, sizeof *c->in_label);
    if (!c->in_label)
        return rl_fail(err, RL_ERR_NOMEM, "out of memory");
    view_words(c, o);
    rl_status st = apply_where(c, t, o, err);
    if (st)
        return st;
    /* the aggregated columns: the seeds, or those named */
    if (o->aggregate) {
        int *agg = calloc(nc, sizeof *agg);
        if (!agg)
            return rl_fail(err, RL_ERR_NOMEM, "out of memory");
        if (strcmp(o->aggregate, "none") != 0 &&
            (st = mark_cols(c, "--aggregate", o->aggregate, agg, err))) {
            free(agg);
            return st;
        }
        size_t len = 0;
        c->agg_words[0] = '\0';
        for (size_t col = 0; col < nc; col++) {
            /* a seed not averaged tells runs apart like any key */
            if (c->is_seed[col] && !agg[col])
                c->is_ident[col] = 1;
            if (agg[col]) {
                c->is_ident[col] = 0;
                len += (size_t)snprintf(c->agg_words + len, sizeof c->agg_words - len, "%s%s",
                                        len ? ", " : "", plot_key_name(h->f[col]));
            }
            c->is_seed[col] = agg[col];
        }
        free(agg);
    }
    for (size_t col = 0; col < nc; col++)
        c->in_label[col] = ((c->is_param[col] || (int)col == c->c_dev) && !c->is_seed[col]) ||
                           (c->is_ident[col] && strcmp(plot_key_name(h->f[col]), "seed") == 0);
    if (o->facet) {
        int col = plot_view_col(c, o->facet);
        if (col < 0 || !is_config_col(c, col))
            return unknown_col(c, "--facet", o->facet, err);
        if (c->is_seed[col])
            return rl_fail(err, RL_ERR_ARG, "plot --facet %s: that column is averaged over "
                           "(--aggregate%s); facet it or average it, not both", o->facet,
                           o->aggregate ? "" : "'s default, the seed: give --aggregate none");
        size_t n_val = 0;
        for (size_t r = 1; r < t->n; r++) {
            if (!*plot_field(c, r, c->c_x))
                continue;
            int seen = 0;
            for (size_t q = 1; q < r && !seen; q++)
                seen = *plot_field(c, q, c->c_x) &&
                       strcmp(plot_field(c, q, col), plot_field(c, r, col)) == 0;
            n_val += !seen;
        }
        if (n_val > 16)
            return rl_fail(err, RL_ERR_ARG, "plot --facet %s: %zu values, more than 16 panels; "
                           "narrow it with --where %s=...", o->facet, n_val, o->facet);
        c->facet_col = col;
        c->is_ident[col] = 1;
    }
    if (o->series) {
        c->is_series = calloc(nc, sizeof *c->is_series);
        if (!c->is_series)
            return rl_fail(err, RL_ERR_NOMEM, "out of memory");
        if ((st = mark_cols(c, "--series", o->series, c->is_series, err)))
            return st;
        for (size_t col = 0; col < nc; col++) {
            if (c->is_series[col] && c->is_seed[col])
                return rl_fail(err, RL_ERR_ARG, "plot --series %s: %s is averaged over "
                               "(--aggregate%s); a line per value of it needs --aggregate "
                               "none or other columns", o->series, h->f[col],
                               o->aggregate ? "" : "'s default, the seed");
            c->in_label[col] = c->is_series[col] && (int)col != c->c_enc;
        }
    }
    return RL_OK;
}

void plot_view_free(plot_ctx *c)
{
    free(c->is_series);
    free(c->in_label);
    c->is_series = NULL;
    c->in_label = NULL;
}
