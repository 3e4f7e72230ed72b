#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check/chk.h"

void chk_compare(const float *got, const double *want, const double *bound, const double *scale,
                 size_t n, chk_stats *s)
{
    memset(s, 0, sizeof *s);
    s->n = n;
    s->first_bad = (size_t)-1;
    double se = 0, sw = 0;
    for (size_t i = 0; i < n; i++) {
        double g = got[i], w = want[i];
        if (!isfinite(g) && isfinite(w)) {
            s->n_nonfinite++;
            if (s->first_bad == (size_t)-1)
                s->first_bad = i;
            continue;
        }
        double e = fabs(g - w);
        double sc = scale ? scale[i] : fabs(w);
        if (sc < 1e-30)
            sc = 1e-30;
        double rel = e / sc;
        double ratio = bound[i] > 0 ? e / bound[i] : (e > 0 ? INFINITY : 0);
        if (e > s->max_abs)
            s->max_abs = e;
        if (rel > s->max_rel)
            s->max_rel = rel;
        if (ratio > s->worst_ratio || (i == 0 && s->bound_at_worst == 0)) {
            s->worst_ratio = ratio;
            s->bound_at_worst = bound[i];
            s->err_at_worst = e;
        }
        if (e > bound[i]) {
            s->n_over++;
            if (s->first_bad == (size_t)-1)
                s->first_bad = i;
        }
        se += e * e;
        sw += w * w;
    }
    s->nmse = sw > 0 ? se / sw : se;
    s->pass = s->n_nonfinite == 0 && s->n_over == 0;
}

rl_status chk_report_add(chk_report *r, const chk_row *row, rl_error *err)
{
    if (r->n_rows == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 32;
        chk_row *p = realloc(r->rows, cap * sizeof *p);
        if (!p)
            return rl_fail(err, RL_ERR_NOMEM, "out of host memory collecting check results");
        r->rows = p;
        r->cap = cap;
    }
    r->rows[r->n_rows++] = *row;
    if (!row->skipped && (!row->stats.pass || !row->guard_ok))
        r->failed = 1;
    return RL_OK;
}

void chk_report_free(chk_report *r)
{
    free(r->rows);
    r->rows = NULL;
    r->n_rows = r->cap = 0;
}
