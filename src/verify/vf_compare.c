/* Comparison of device output with the CPU reference: non-finite rules,
 * per-element bounds, NMSE gate (rules and gate choice in vf.h). */
#include <math.h>
#include <string.h>

#include "verify/vf.h"

/* Non-finite rule of element i: 1 when both values are finite (compare the
 * numbers); 0 when there is nothing more to compare: equal infinities, or a
 * mismatch, counted in *n_nonfinite (first index into *first_bad). A NaN
 * reference is always a mismatch, counted in *n_ref_nan too: NaN never
 * equals NaN. */
static int finite_pair(double dev, double ref, size_t i, size_t *n_nonfinite, size_t *n_ref_nan,
                       size_t *first_bad)
{
    if (isfinite(dev) && isfinite(ref))
        return 1;
    if (isinf(ref) && dev == ref)
        return 0;
    if (isnan(ref))
        (*n_ref_nan)++;
    (*n_nonfinite)++;
    if (*first_bad == VF_NONE)
        *first_bad = i;
    return 0;
}

static void gate(vf_stats *s, double se, double sr, double sb, double f)
{
    s->gate_fraction = f;
    s->nmse = sr > 0 ? se / sr : se;
    s->nmse_bound = sr > 0 ? sb / sr : sb;
    s->nmse_gate = f * s->nmse_bound;
    /* Compared unnormalised (se <= f sb), the same test without the division's rounding. */
    s->nmse_ok = se <= f * sb;
}

static void verdict(vf_stats *s)
{
    s->pass = s->n_nonfinite == 0 && s->n_over == 0 && s->nmse_ok && !s->guard_bad;
}

void vf_stream_begin(vf_stream *v, double gate_fraction)
{
    memset(v, 0, sizeof *v);
    v->s.first_bad = VF_NONE;
    v->gate_fraction = gate_fraction;
}

void vf_stream_add(vf_stream *v, const float *dev, const double *ref, const double *bound,
                   const double *scale, size_t n)
{
    vf_stats *s = &v->s;
    for (size_t k = 0; k < n; k++) {
        size_t i = v->next + k; /* the element's index in the whole comparison */
        double g = dev[k], w = ref[k];
        if (!finite_pair(g, w, i, &s->n_nonfinite, &s->n_ref_nan, &s->first_bad))
            continue;
        double e = fabs(g - w);
        double sc = scale ? scale[k] : fabs(w);
        if (sc < 1e-30)
            sc = 1e-30;
        double rel = e / sc;
        double ratio = bound[k] > 0 ? e / bound[k] : (e > 0 ? INFINITY : 0);
        if (e > s->max_abs)
            s->max_abs = e;
        if (rel > s->max_rel)
            s->max_rel = rel;
        if (!v->have_worst || ratio > s->worst_ratio) {
            v->have_worst = 1;
            s->worst_ratio = ratio;
            s->bound_at_worst = bound[k];
            s->err_at_worst = e;
        }
        if (e > bound[k]) {
            s->n_over++;
            if (s->first_bad == VF_NONE)
                s->first_bad = i;
        }
        v->se += e * e;
        v->sr += w * w;
        v->sb += bound[k] * bound[k];
    }
    v->next += n;
    s->n = v->next;
}

void vf_stream_end(const vf_stream *v, vf_stats *s)
{
    *s = v->s;
    gate(s, v->se, v->sr, v->sb, v->gate_fraction);
    verdict(s);
}

void vf_compare(const float *dev, const double *ref, const double *bound, const double *scale,
                size_t n, double gate_fraction, vf_stats *s)
{
    vf_stream v;
    vf_stream_begin(&v, gate_fraction);
    vf_stream_add(&v, dev, ref, bound, scale, n);
    vf_stream_end(&v, s);
}

void vf_set_guard(vf_stats *s, int guard_ok)
{
    if (!guard_ok)
        s->guard_bad = 1;
    verdict(s);
}

/* How far a comparison's NMSE is toward its gate (> 1: over). */
static double gate_use(const vf_stats *s)
{
    if (s->nmse_gate > 0)
        return s->nmse / s->nmse_gate;
    return s->nmse > 0 ? INFINITY : 0;
}

void vf_merge(vf_stats *into, const vf_stats *s)
{
    if (s->n == 0 && !s->guard_bad)
        return;
    if (into->n == 0 && !into->guard_bad) {
        *into = *s;
        return;
    }
    if (into->first_bad == VF_NONE)
        into->first_bad = s->first_bad;
    into->n += s->n;
    into->n_nonfinite += s->n_nonfinite;
    into->n_ref_nan += s->n_ref_nan;
    into->n_over += s->n_over;
    if (s->max_abs > into->max_abs)
        into->max_abs = s->max_abs;
    if (s->max_rel > into->max_rel)
        into->max_rel = s->max_rel;
    if (s->worst_ratio >= into->worst_ratio) {
        into->worst_ratio = s->worst_ratio;
        into->err_at_worst = s->err_at_worst;
        into->bound_at_worst = s->bound_at_worst;
    }
    if (gate_use(s) > gate_use(into)) {
        into->nmse = s->nmse;
        into->nmse_bound = s->nmse_bound;
        into->gate_fraction = s->gate_fraction;
        into->nmse_gate = s->nmse_gate;
    }
    into->nmse_ok = into->nmse_ok && s->nmse_ok;
    into->guard_bad = into->guard_bad || s->guard_bad;
    into->pass = into->pass && s->pass;
}

void vf_acc_add(vf_acc *a, double dev, double ref, double scale)
{
    if (a->n == 0 && a->n_nonfinite == 0)
        a->first_bad = VF_NONE;
    size_t i = a->n++;
    if (!finite_pair(dev, ref, i, &a->n_nonfinite, &a->n_ref_nan, &a->first_bad))
        return;
    double e = fabs(dev - ref);
    if (e > a->max_abs)
        a->max_abs = e;
    double r = e / scale;
    if (r > a->max_rel)
        a->max_rel = r;
    a->sum_e2 += e * e;
    a->sum_r2 += ref * ref;
    a->sum_s2 += scale * scale;
}

void vf_acc_judge(const vf_acc *a, double tol, double gate_fraction, vf_stats *s)
{
    memset(s, 0, sizeof *s);
    s->n = a->n;
    s->n_nonfinite = a->n_nonfinite;
    s->n_ref_nan = a->n_ref_nan;
    s->first_bad = a->n ? a->first_bad : VF_NONE;
    s->max_abs = a->max_abs;
    s->max_rel = a->max_rel;
    s->err_at_worst = a->max_rel;
    s->bound_at_worst = tol;
    s->worst_ratio = tol > 0 ? a->max_rel / tol : (a->max_rel > 0 ? INFINITY : 0);
    if (a->max_rel > tol)
        s->n_over = 1; /* per-element positions are not kept: the worst one counts */
    gate(s, a->sum_e2, a->sum_r2, tol * tol * a->sum_s2, gate_fraction);
    s->pass = s->n_nonfinite == 0 && s->n_over == 0 && s->nmse_ok;
}
