/* plot_group.c — results.csv rows grouped for plotting: one figure per
 * metric that has x values, one series per run and device, each series
 * labelled by what tells it apart from the figure's other series. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plot/plot_int.h"

/* "<table>.ref_<name>" metrics are reference curves (ln N, a bound...). */
static int is_ref_metric(const char *m)
{
    const char *dot = strrchr(m, '.');
    return dot && strncmp(dot + 1, "ref_", 4) == 0;
}

/* Same table: the metrics share the text before their last '.'. */
int plot_same_table(const char *a, const char *b)
{
    const char *da = strrchr(a, '.'), *db = strrchr(b, '.');
    return da && db && da - a == db - b && strncmp(a, b, (size_t)(da - a)) == 0;
}

static int push_idx(size_t **a, size_t *n, size_t *cap, size_t v)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        size_t *p = realloc(*a, c * sizeof *p);
        if (!p)
            return -1;
        *a = p;
        *cap = c;
    }
    (*a)[(*n)++] = v;
    return 0;
}

const char *plot_field(const plot_ctx *c, size_t row, int col)
{
    const plot_csv_row *r = &c->t->rows[row];
    return col >= 0 && (size_t)col < r->n ? r->f[col] : "";
}

void plot_series_label(const plot_ctx *c, const plot_figure *fg, size_t si, char *out,
                       size_t cap)
{
    size_t len = (size_t)snprintf(out, cap, "%s", plot_field(c, fg->s[si].first_row, c->c_enc));
    const plot_csv_row *h = &c->t->rows[0];
    for (size_t col = 0; col < h->n && len < cap; col++) {
        if (!(c->is_param[col] || (int)col == c->c_dev))
            continue;
        const char *v0 = plot_field(c, fg->s[0].first_row, (int)col);
        int differs = 0;
        for (size_t k = 1; k < fg->n && !differs; k++)
            differs = strcmp(v0, plot_field(c, fg->s[k].first_row, (int)col)) != 0;
        if (differs) {
            const char *v = plot_field(c, fg->s[si].first_row, (int)col);
            /* a swept key's section is clear from its name: "max_len=4096"
             * for "params.max_len" */
            const char *key = h->f[col];
            static const char *const sections[] = {"params.", "encoding.", "model.", "data."};
            for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
                if (strncmp(key, sections[i], strlen(sections[i])) == 0 &&
                    key[strlen(sections[i])])
                    key += strlen(sections[i]);
            len += (size_t)snprintf(out + len, cap - len, "%s%s=%s", len ? " " : "", key,
                                    *v ? v : "(default)");
        }
    }
    if (len == 0)
        snprintf(out, cap, "%s", fg->s[si].run_id);
}

typedef struct xrow {
    double x;
    size_t row;
} xrow;

static int by_x(const void *a, const void *b)
{
    double xa = ((const xrow *)a)->x, xb = ((const xrow *)b)->x;
    return (xa > xb) - (xa < xb);
}

/* stable enough for plotting */
rl_status plot_sort_series(const plot_ctx *c, plot_series *s, rl_error *err)
{
    xrow *v = malloc((s->n ? s->n : 1) * sizeof *v);
    if (!v)
        return rl_fail(err, RL_ERR_NOMEM, "out of memory sorting a series");
    for (size_t k = 0; k < s->n; k++) {
        v[k].row = s->rows[k];
        v[k].x = 0;
        plot_parse_num(plot_field(c, s->rows[k], c->c_x), &v[k].x);
    }
    qsort(v, s->n, sizeof *v, by_x);
    for (size_t k = 0; k < s->n; k++)
        s->rows[k] = v[k].row;
    free(v);
    return RL_OK;
}

unsigned plot_flags(const char *words)
{
    static const struct {
        const char *word;
        unsigned flag;
    } known[] = {{"log-x", PLOT_F_LOGX},       {"log-y", PLOT_F_LOGY}, {"hide", PLOT_F_HIDE},
                 {"ref", PLOT_F_REF},          {"fraction", PLOT_F_FRACTION},
                 {"line-1", PLOT_F_ONE},       {"train-len", PLOT_F_TRAIN},
                 {"ci", PLOT_F_CI}};
    unsigned f = 0;
    while (*words) {
        size_t n = strcspn(words, " ");
        for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
            if (strlen(known[i].word) == n && strncmp(words, known[i].word, n) == 0)
                f |= known[i].flag;
        words += n;
        words += strspn(words, " ");
    }
    return f;
}

static const char *field_or(const plot_ctx *c, size_t r, int col, const char *fallback)
{
    const char *v = plot_field(c, r, col);
    return *v ? v : fallback;
}

/* The figure of metric m at length len (new at the end of figs when first
 * seen at row r). */
static plot_figure *figure_of(const plot_ctx *c, plot_figure **figs, size_t *n_figs,
                              size_t *cap_figs, const char *m, const char *len, size_t r)
{
    for (size_t i = 0; i < *n_figs; i++)
        if (strcmp((*figs)[i].metric, m) == 0 && strcmp((*figs)[i].length, len) == 0)
            return &(*figs)[i];
    if (*n_figs == *cap_figs) {
        size_t cc = *cap_figs ? *cap_figs * 2 : 8;
        plot_figure *nf = realloc(*figs, cc * sizeof *nf);
        if (!nf)
            return NULL;
        *figs = nf;
        *cap_figs = cc;
    }
    plot_figure *fg = &(*figs)[(*n_figs)++];
    memset(fg, 0, sizeof *fg);
    fg->metric = m;
    fg->length = len;
    char safe[128], sl[32];
    plot_safe_name(m, safe, sizeof safe);
    plot_safe_name(len, sl, sizeof sl);
    snprintf(fg->name, sizeof fg->name, *len ? "%s_n%s" : "%s", safe, sl);
    fg->flags = plot_flags(plot_field(c, r, c->c_plot));
    fg->is_ref = is_ref_metric(m) || (fg->flags & PLOT_F_REF);
    fg->title = field_or(c, r, c->c_title, m);
    fg->unit = plot_field(c, r, c->c_unit);
    fg->x_title = field_or(c, r, c->c_xtitle, field_or(c, r, c->c_xname, "x"));
    fg->x_unit = plot_field(c, r, c->c_xunit);
    return fg;
}

/* The series of (run, dev) in fg (new when first seen at row r). */
static plot_series *series_of(plot_figure *fg, const char *run, const char *dev, size_t r)
{
    for (size_t i = 0; i < fg->n; i++)
        if (strcmp(fg->s[i].run_id, run) == 0 && strcmp(fg->s[i].device, dev) == 0)
            return &fg->s[i];
    if (fg->n == fg->cap) {
        size_t cc = fg->cap ? fg->cap * 2 : 8;
        plot_series *ns = realloc(fg->s, cc * sizeof *ns);
        if (!ns)
            return NULL;
        fg->s = ns;
        fg->cap = cc;
    }
    plot_series *s = &fg->s[fg->n++];
    memset(s, 0, sizeof *s);
    s->run_id = run;
    s->device = dev;
    s->first_row = r;
    return s;
}

rl_status plot_group(const plot_ctx *c, plot_figure **figs, size_t *n_figs, rl_error *err)
{
    size_t cap_figs = 0;
    *figs = NULL;
    *n_figs = 0;
    for (size_t r = 1; r < c->t->n; r++) {
        const char *xs = plot_field(c, r, c->c_x);
        if (!*xs)
            continue;
        const char *m = plot_field(c, r, c->c_metric), *run = plot_field(c, r, c->c_run);
        /* a length that is not x itself splits the metric's figures */
        const char *len = plot_field(c, r, c->c_len);
        if (strcmp(len, xs) == 0)
            len = "";
        plot_figure *fg = figure_of(c, figs, n_figs, &cap_figs, m, len, r);
        if (!fg)
            return rl_fail(err, RL_ERR_NOMEM, "out of memory");
        double xv;
        if (!plot_parse_num(xs, &xv))
            fg->categorical = 1;
        plot_series *s = series_of(fg, run, plot_field(c, r, c->c_dev), r);
        if (!s || push_idx(&s->rows, &s->n, &s->cap, r) != 0)
            return rl_fail(err, RL_ERR_NOMEM, "out of memory");
    }
    /* A figure whose every value is the same number says nothing a
     * sentence does not. */
    for (size_t i = 0; i < *n_figs; i++) {
        plot_figure *fg = &(*figs)[i];
        int seen = 0, same = 1;
        double v0 = 0;
        for (size_t k = 0; k < fg->n && same; k++)
            for (size_t j = 0; j < fg->s[k].n && same; j++) {
                double v;
                if (!plot_parse_num(plot_field(c, fg->s[k].rows[j], c->c_value), &v))
                    continue;
                if (!seen)
                    v0 = v, seen = 1;
                same = v == v0;
            }
        fg->constant = seen && same;
        fg->constant_value = v0;
    }
    return RL_OK;
}

void plot_figures_free(plot_figure *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (size_t k = 0; k < f[i].n; k++)
            free(f[i].s[k].rows);
        free(f[i].s);
    }
    free(f);
}
