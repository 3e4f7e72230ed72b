/* plot_group.c — results.csv rows grouped for plotting: one figure per
 * metric that has x values, one series per run and device, each series
 * labelled by what tells it apart from the figure's other series. */
#include <math.h>
#include <stdint.h>
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
    const rl_csv_row *r = &c->t->rows[row];
    return col >= 0 && (size_t)col < r->n ? r->f[col] : "";
}

const char *plot_key_name(const char *key)
{
    static const char *const sections[] = {"params.", "encoding.", "model.", "data."};
    for (size_t i = 0; i < sizeof sections / sizeof sections[0]; i++)
        if (strncmp(key, sections[i], strlen(sections[i])) == 0 && key[strlen(sections[i])])
            return key + strlen(sections[i]);
    return key;
}

void plot_series_label(const plot_ctx *c, const plot_figure *fg, size_t si, int skip, char *out,
                       size_t cap)
{
    const char *enc = plot_field(c, fg->s[si].first_row, c->c_enc);
    /* by --series: the encoding only when it is one of them */
    int with_enc = skip != c->c_enc && (!c->is_series || c->is_series[c->c_enc]);
    size_t len = with_enc ? (size_t)snprintf(out, cap, "%s", enc) : 0;
    if (!len)
        out[0] = '\0';
    const rl_csv_row *h = &c->t->rows[0];
    /* the parameters first, a seed (when lines are not averaged over it)
     * last: "yarn factor=4 seed=2" */
    for (size_t i = 0; i < 2 * h->n && len < cap; i++) {
        size_t col = i % h->n;
        int named = c->in_label ? c->in_label[col] : c->is_param[col] || (int)col == c->c_dev;
        if (!named || (int)col == skip ||
            (strcmp(plot_key_name(h->f[col]), "seed") == 0) != (i >= h->n))
            continue;
        /* a mean over seeds has no one seed */
        if (c->is_seed[col] && fg->s[si].n_runs > 1)
            continue;
        const char *v = plot_field(c, fg->s[si].first_row, (int)col);
        if (!*v)
            continue; /* not swept for this run: its own value, said by its encoding */
        int differs = 0;
        for (size_t k = 0; k < fg->n && !differs; k++)
            differs = strcmp(v, plot_field(c, fg->s[k].first_row, (int)col)) != 0;
        if (differs) {
            const char *key = plot_key_name(h->f[col]);
            len += (size_t)snprintf(out + len, cap - len, "%s%s=%s", len ? " " : "", key, v);
        }
    }
    if (len == 0 && c->is_series) {
        /* every line the same in what names lines: its series values */
        for (size_t col = 0; col < h->n && len < cap; col++)
            if (c->is_series[col] && (int)col != skip)
                len += (size_t)snprintf(out + len, cap - len, (int)col == c->c_enc ? "%s%s"
                                        : "%s%s=%s", len ? " " : "",
                                        (int)col == c->c_enc ? "" : plot_key_name(h->f[col]),
                                        plot_field(c, fg->s[si].first_row, (int)col));
    }
    if (len == 0)
        snprintf(out, cap, "%s", *enc ? enc : fg->s[si].run_id);
}

/* ---- points: values (means over seeds) with their 95 % intervals -------- */

int plot_ci_bound(const char *m, unsigned flags, size_t *base_len, int *is_hi)
{
    size_t n = strlen(m);
    if (!(flags & RL_PLOT_CI) || n < 6)
        return 0;
    if (strcmp(m + n - 5, "_lo95") == 0)
        *is_hi = 0;
    else if (strcmp(m + n - 5, "_hi95") == 0)
        *is_hi = 1;
    else
        return 0;
    *base_len = n - 5;
    return 1;
}

/* Interval bound rows by what they bound: X, run, device, length, x. */
typedef struct ci_ent {
    char *key;
    size_t row;
} ci_ent;

typedef struct ci_index {
    ci_ent *e;
    size_t n;
} ci_index;

static char *ci_key(const plot_ctx *c, size_t r, const char *metric, size_t mlen, int is_hi)
{
    const char *run = plot_field(c, r, c->c_run), *dev = plot_field(c, r, c->c_dev);
    const char *len = plot_field(c, r, c->c_len), *x = plot_field(c, r, c->c_x);
    size_t n = mlen + strlen(run) + strlen(dev) + strlen(len) + strlen(x) + 8;
    char *k = malloc(n);
    if (k)
        snprintf(k, n, "%c%.*s\x1f%s\x1f%s\x1f%s\x1f%s", is_hi ? 'h' : 'l', (int)mlen, metric, run,
                 dev, len, x);
    return k;
}

static int by_key(const void *a, const void *b)
{
    return strcmp(((const ci_ent *)a)->key, ((const ci_ent *)b)->key);
}

static void ci_free(ci_index *ix)
{
    for (size_t i = 0; i < ix->n; i++)
        free(ix->e[i].key);
    free(ix->e);
}

static rl_status ci_build(const plot_ctx *c, ci_index *ix, rl_error *err)
{
    ix->n = 0;
    ix->e = malloc(c->t->n * sizeof *ix->e);
    if (!ix->e)
        return rl_fail(err, RL_ERR_NOMEM, "out of memory");
    for (size_t r = 1; r < c->t->n; r++) {
        const char *m = plot_field(c, r, c->c_metric);
        size_t bl;
        int hi;
        if (!plot_ci_bound(m, plot_flags(plot_field(c, r, c->c_plot)), &bl, &hi))
            continue;
        char *k = ci_key(c, r, m, bl, hi);
        if (!k)
            return rl_fail(err, RL_ERR_NOMEM, "out of memory");
        ix->e[ix->n++] = (ci_ent){k, r};
    }
    qsort(ix->e, ix->n, sizeof *ix->e, by_key);
    return RL_OK;
}

/* The bound (is_hi) of row r's value from the index: NAN when absent. */
static double ci_find(const plot_ctx *c, const ci_index *ix, size_t r, int is_hi)
{
    if (!ix->n)
        return NAN;
    const char *m = plot_field(c, r, c->c_metric);
    char *k = ci_key(c, r, m, strlen(m), is_hi);
    if (!k)
        return NAN;
    ci_ent want = {k, 0};
    const ci_ent *e = bsearch(&want, ix->e, ix->n, sizeof *ix->e, by_key);
    free(k);
    double v;
    return e && rl_csv_num(plot_field(c, e->row, c->c_value), &v) ? v : NAN;
}

/* Two-sided 95 % t quantiles for 1..3 degrees of freedom (2..4 seeds). */
static const double t975[] = {12.706204736, 4.302652730, 3.182446305};

static int by_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Mean of v[n] (n >= 2 seeds) and its 95 % interval: a t-interval
 * (mean +- t(0.975, n-1) s / sqrt n) for n < 5 seeds, else the percentile
 * interval of 2000 bootstrap resamples of the seeds (a fixed generator: the
 * same figure every time). Returns PLOT_CI_T or PLOT_CI_BOOT. */
static unsigned seed_interval(const double *v, size_t n, double *mean, double *lo, double *hi)
{
    double m = 0, ss = 0;
    for (size_t i = 0; i < n; i++)
        m += v[i];
    m /= (double)n;
    for (size_t i = 0; i < n; i++)
        ss += (v[i] - m) * (v[i] - m);
    *mean = m;
    if (n < 5) {
        double half = t975[n - 2] * sqrt(ss / (double)(n - 1) / (double)n);
        *lo = m - half;
        *hi = m + half;
        return PLOT_CI_T;
    }
    enum { B = 2000 };
    double *bm = malloc(B * sizeof *bm);
    if (!bm) {
        *lo = *hi = NAN;
        return 0;
    }
    uint64_t st = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
    for (size_t b = 0; b < B; b++) {
        double sum = 0;
        for (size_t i = 0; i < n; i++) {
            st ^= st << 13; /* xorshift64 */
            st ^= st >> 7;
            st ^= st << 17;
            sum += v[(size_t)(st % n)];
        }
        bm[b] = sum / (double)n;
    }
    qsort(bm, B, sizeof *bm, by_double);
    *lo = bm[(size_t)(0.025 * B)];
    *hi = bm[(size_t)(0.975 * B) - 1];
    free(bm);
    return PLOT_CI_BOOT;
}

typedef struct xrow {
    double x;
    size_t row, order;
} xrow;

static int by_x(const void *a, const void *b)
{
    const xrow *p = a, *q = b;
    int d = (p->x > q->x) - (p->x < q->x);
    return d ? d : (p->order > q->order) - (p->order < q->order);
}

/* s->pt from s->rows: one point per x (numeric x in order; categorical in
 * order of first appearance), the mean over the rows (seeds) at that x. */
static rl_status series_points(const plot_ctx *c, int categorical, const ci_index *ix,
                               plot_series *s, rl_error *err)
{
    xrow *v = malloc((s->n ? s->n : 1) * sizeof *v);
    double *vals = malloc((s->n ? s->n : 1) * sizeof *vals);
    s->pt = malloc((s->n ? s->n : 1) * sizeof *s->pt);
    if (!v || !vals || !s->pt) {
        free(v);
        free(vals);
        return rl_fail(err, RL_ERR_NOMEM, "out of memory");
    }
    size_t nv = 0;
    for (size_t k = 0; k < s->n; k++) {
        double y;
        if (!rl_csv_num(plot_field(c, s->rows[k], c->c_value), &y))
            continue; /* NaN/empty values are skipped, not plotted as 0 */
        v[nv] = (xrow){0, s->rows[k], k};
        if (categorical) {
            /* the order of the first row with this x */
            const char *xs = plot_field(c, s->rows[k], c->c_x);
            for (size_t j = 0; j < nv; j++)
                if (strcmp(plot_field(c, v[j].row, c->c_x), xs) == 0) {
                    v[nv].x = v[j].x;
                    break;
                }
            if (v[nv].x == 0)
                v[nv].x = (double)(nv + 1);
        } else {
            rl_csv_num(plot_field(c, s->rows[k], c->c_x), &v[nv].x);
        }
        nv++;
    }
    qsort(v, nv, sizeof *v, by_x);
    s->n_pt = 0;
    for (size_t i = 0; i < nv;) {
        size_t j = i, n = 0;
        for (; j < nv && v[j].x == v[i].x; j++)
            rl_csv_num(plot_field(c, v[j].row, c->c_value), &vals[n++]);
        plot_point *p = &s->pt[s->n_pt++];
        p->x = categorical ? 0 : v[i].x;
        p->xs = plot_field(c, v[i].row, c->c_x);
        p->n = n;
        if (n == 1) {
            p->y = vals[0];
            p->lo = ci_find(c, ix, v[i].row, 0);
            p->hi = ci_find(c, ix, v[i].row, 1);
            if (isfinite(p->lo) && isfinite(p->hi))
                s->ci |= PLOT_CI_ROWS;
        } else {
            s->ci |= seed_interval(vals, n, &p->y, &p->lo, &p->hi);
            /* a fraction's interval over few seeds can reach past [0, 1]
             * (t with 2 degrees of freedom): no proportion lies there */
            if (plot_flags(plot_field(c, v[i].row, c->c_plot)) & RL_PLOT_FRACTION) {
                p->lo = p->lo < 0 ? 0 : p->lo;
                p->hi = p->hi > 1 ? 1 : p->hi;
            }
        }
        i = j;
    }
    free(v);
    free(vals);
    return RL_OK;
}

/* The seed of row r: its seed columns' values. */
static int same_seed(const plot_ctx *c, size_t a, size_t b)
{
    const rl_csv_row *h = &c->t->rows[0];
    for (size_t col = 0; col < h->n; col++)
        if (c->is_seed[col] && strcmp(plot_field(c, a, (int)col), plot_field(c, b, (int)col)))
            return 0;
    return 1;
}

static int same_config(const plot_ctx *c, size_t a, size_t b)
{
    const rl_csv_row *h = &c->t->rows[0];
    for (size_t col = 0; col < h->n; col++)
        if (c->is_ident[col] && strcmp(plot_field(c, a, (int)col), plot_field(c, b, (int)col)))
            return 0;
    return 1;
}

static rl_status combine(plot_figure *fg, int *group, rl_error *err);

/* n series' lines, none assigned yet (-1); NULL when out of memory. */
static int *groups_new(size_t n)
{
    int *g = malloc((n ? n : 1) * sizeof *g);
    for (size_t i = 0; g && i < n; i++)
        g[i] = -1;
    return g;
}

/* Series of fg whose runs differ only in their seed become one (their
 * rows together): only when every run of the group has a seed of its own,
 * so that runs told apart by something results.csv does not show are never
 * averaged. */
static rl_status merge_seeds(const plot_ctx *c, plot_figure *fg, rl_error *err)
{
    size_t n = fg->n;
    int *group = groups_new(n);
    if (!group)
        return rl_fail(err, RL_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (group[i] >= 0)
            continue;
        group[i] = (int)i;
        size_t members = 1;
        int distinct = 1;
        for (size_t j = i + 1; j < n; j++) {
            if (group[j] >= 0 || strcmp(fg->s[i].device, fg->s[j].device) ||
                !same_config(c, fg->s[i].first_row, fg->s[j].first_row))
                continue;
            for (size_t k = i; k < j && distinct; k++)
                if (group[k] == (int)i && same_seed(c, fg->s[k].first_row, fg->s[j].first_row))
                    distinct = 0;
            group[j] = (int)i;
            members++;
        }
        if (members > 1 && !distinct) /* not seeds of one configuration: keep apart */
            for (size_t j = i + 1; j < n; j++)
                if (group[j] == (int)i)
                    group[j] = (int)j;
    }
    return combine(fg, group, err);
}

/* --series: series of fg with the same series (and facet) values are one
 * line; its runs must agree in every other column of their configuration
 * and differ in what is aggregated, else the line would average what the
 * view does not say: refused naming the column and two runs. */
static rl_status merge_series(const plot_ctx *c, plot_figure *fg, rl_error *err)
{
    size_t n = fg->n;
    const rl_csv_row *h = &c->t->rows[0];
    int *group = groups_new(n);
    if (!group)
        return rl_fail(err, RL_ERR_NOMEM, "out of memory");
    for (size_t i = 0; i < n; i++) {
        if (group[i] >= 0)
            continue;
        group[i] = (int)i;
        size_t a = fg->s[i].first_row;
        for (size_t j = i + 1; j < n; j++) {
            size_t b = fg->s[j].first_row;
            int same = group[j] < 0;
            for (size_t col = 0; col < h->n && same; col++)
                if (c->is_series[col] || (int)col == c->facet_col)
                    same = strcmp(plot_field(c, a, (int)col), plot_field(c, b, (int)col)) == 0;
            if (!same)
                continue;
            for (size_t col = 0; col < h->n; col++) {
                if (!c->is_ident[col] || c->is_series[col] || (int)col == c->facet_col)
                    continue;
                const char *va = plot_field(c, a, (int)col), *vb = plot_field(c, b, (int)col);
                if (strcmp(va, vb) != 0) {
                    free(group);
                    return rl_fail(err, RL_ERR_ARG, "plot: runs %s and %s are one line of "
                                   "metric %s by --series, but differ in %s ('%s' and '%s'); add "
                                   "it to --series, --facet it, --aggregate it, or choose one "
                                   "with --where %s=%s", fg->s[i].run_id, fg->s[j].run_id,
                                   fg->metric, h->f[col], va, vb, plot_key_name(h->f[col]), va);
                }
            }
            for (size_t k = i; k < j; k++)
                if (group[k] == (int)i && same_seed(c, fg->s[k].first_row, b)) {
                    free(group);
                    return rl_fail(err, RL_ERR_ARG, "plot: runs %s and %s are one line of "
                                   "metric %s by --series and the same in %s too; %s", 
                                   fg->s[k].run_id, fg->s[j].run_id, fg->metric,
                                   *c->agg_words ? c->agg_words : "everything",
                                   *c->agg_words ? "tell them apart with --series, --facet or "
                                   "--where" : "average them with --aggregate KEY, or tell "
                                   "them apart with --series, --facet or --where");
                }
            group[j] = (int)i;
        }
    }
    return combine(fg, group, err);
}

/* Joins the series of fg by group[] (group[i] == i: a line's first
 * series; else the first series of i's line): rows together, run counts
 * added. Frees group. */
static rl_status combine(plot_figure *fg, int *group, rl_error *err)
{
    size_t n = fg->n, out = 0;
    rl_status st = RL_OK;
    for (size_t i = 0; i < n; i++) {
        if (group[i] != (int)i) {
            /* the head (earlier, already moved) is at group[head] now */
            plot_series *d = &fg->s[group[group[i]]], *s = &fg->s[i];
            for (size_t k = 0; k < s->n && !st; k++)
                if (push_idx(&d->rows, &d->n, &d->cap, s->rows[k]) != 0)
                    st = rl_fail(err, RL_ERR_NOMEM, "out of memory");
            d->n_runs += s->n_runs;
            free(s->rows);
            continue;
        }
        fg->s[out] = fg->s[i];
        group[i] = (int)out++; /* a head: where it went */
    }
    fg->n = out;
    free(group);
    return st;
}

static const char *field_or(const plot_ctx *c, size_t r, int col, const char *fallback)
{
    const char *v = plot_field(c, r, col);
    return *v ? v : fallback;
}

void plot_safe_name(const char *in, char *out, size_t cap)
{
    size_t i = 0;
    for (; in[i] && i + 1 < cap; i++) {
        char c = in[i];
        out[i] = ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '.') ? c : '_';
    }
    out[i] = '\0';
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
    fg->is_ref = is_ref_metric(m) || (fg->flags & RL_PLOT_REF);
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
    s->n_runs = 1;
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
        size_t bl;
        int hi;
        if (plot_ci_bound(m, plot_flags(plot_field(c, r, c->c_plot)), &bl, &hi))
            continue; /* X's interval, drawn with X */
        /* a length that is not x itself splits the metric's figures */
        const char *len = plot_field(c, r, c->c_len);
        if (strcmp(len, xs) == 0)
            len = "";
        plot_figure *fg = figure_of(c, figs, n_figs, &cap_figs, m, len, r);
        if (!fg)
            return rl_fail(err, RL_ERR_NOMEM, "out of memory");
        double xv;
        if (!rl_csv_num(xs, &xv))
            fg->categorical = 1;
        plot_series *s = series_of(fg, run, plot_field(c, r, c->c_dev), r);
        if (!s || push_idx(&s->rows, &s->n, &s->cap, r) != 0)
            return rl_fail(err, RL_ERR_NOMEM, "out of memory");
    }
    /* runs that differ in their seed only: one series; then its points */
    ci_index ix = {0};
    rl_status st = ci_build(c, &ix, err);
    for (size_t i = 0; i < *n_figs && !st; i++) {
        plot_figure *fg = &(*figs)[i];
        st = c->is_series ? merge_series(c, fg, err) : merge_seeds(c, fg, err);
        for (size_t k = 0; k < fg->n && !st; k++)
            st = series_points(c, fg->categorical, &ix, &fg->s[k], err);
    }
    ci_free(&ix);
    if (st)
        return st;
    /* A figure whose every value is the same number says nothing a
     * sentence does not. */
    for (size_t i = 0; i < *n_figs; i++) {
        plot_figure *fg = &(*figs)[i];
        int seen = 0, same = 1;
        double v0 = 0;
        for (size_t k = 0; k < fg->n && same; k++)
            for (size_t j = 0; j < fg->s[k].n && same; j++) {
                double v;
                if (!rl_csv_num(plot_field(c, fg->s[k].rows[j], c->c_value), &v))
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
        for (size_t k = 0; k < f[i].n; k++) {
            free(f[i].s[k].rows);
            free(f[i].s[k].pt);
        }
        free(f[i].s);
    }
    free(f);
}
