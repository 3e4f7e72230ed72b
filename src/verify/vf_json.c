/* The one tolerance record (vf.h vf_stats_json): vf_stats in one
 * vocabulary, non-finite numbers as null with their keys named. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>

#include "verify/vf.h"

const char *vf_stats_reason(const vf_stats *s, char *buf, size_t size)
{
    size_t at = 0;
    if (!size)
        return buf;
    buf[0] = '\0';
    if (s->pass)
        return buf;
#define ADD(...)                                                                       \
    do {                                                                               \
        if (at < size) {                                                               \
            int w = snprintf(buf + at, size - at, "%s", at ? "; " : "");               \
            at += w > 0 ? (size_t)w : 0;                                               \
        }                                                                              \
        if (at < size) {                                                               \
            int w = snprintf(buf + at, size - at, __VA_ARGS__);                        \
            at += w > 0 ? (size_t)w : 0;                                               \
        }                                                                              \
    } while (0)
    if (s->n_ref_nan)
        ADD("%zu reference value(s) NaN (the reference is broken or was fed NaN)", s->n_ref_nan);
    if (s->n_nonfinite > s->n_ref_nan)
        ADD("%zu element(s) non-finite where the reference is not the same value",
            s->n_nonfinite - s->n_ref_nan);
    if (s->n_over)
        ADD("%zu element(s) over their bound (worst error/bound %.3g)", s->n_over, s->worst_ratio);
    if (s->first_bad != VF_NONE && (s->n_over || s->n_nonfinite))
        ADD("first at element %zu", s->first_bad);
    if (!s->nmse_ok)
        ADD("NMSE %.3g over its gate %.3g", s->nmse, s->nmse_gate);
    if (s->guard_bad)
        ADD("the kernel wrote past its output (guard words overwritten)");
    if (!at)
        ADD("failed (no single cause recorded)");
#undef ADD
    return buf;
}

/* Sets each (key, number) of o, a non-finite one as null and its key in nf. */
struct vf_num { const char *k; double v; };
static void set_nums(json_t *o, json_t *nf, const struct vf_num *nums, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (isfinite(nums[i].v)) {
            json_object_set_new(o, nums[i].k, json_real(nums[i].v));
        } else {
            json_object_set_new(o, nums[i].k, json_null());
            json_array_append_new(nf, json_string(nums[i].k));
        }
    }
}

static json_t *close_nums(json_t *o, json_t *nf)
{
    if (json_array_size(nf))
        json_object_set_new(o, "not_finite", nf);
    else
        json_decref(nf);
    return o;
}

json_t *vf_scalar_json(double err, double bound, int pass)
{
    json_t *o = json_object(), *nf = json_array();
    if (!o || !nf) {
        json_decref(o);
        json_decref(nf);
        return NULL;
    }
    json_object_set_new(o, "pass", json_boolean(pass));
    double ratio = bound > 0 ? err / bound : err == 0 ? 0 : INFINITY;
    const struct vf_num nums[] = {
        {"error_at_worst", err},
        {"bound_at_worst", bound},
        {"worst_error_over_bound", ratio},
    };
    set_nums(o, nf, nums, sizeof nums / sizeof nums[0]);
    return close_nums(o, nf);
}

json_t *vf_stats_json(const vf_stats *s)
{
    json_t *o = json_object(), *nf = json_array();
    if (!o || !nf) {
        json_decref(o);
        json_decref(nf);
        return NULL;
    }
    json_object_set_new(o, "pass", json_boolean(s->pass));
    json_object_set_new(o, "elements", json_integer((json_int_t)s->n));
    json_object_set_new(o, "over_bound", json_integer((json_int_t)(s->n_over + s->n_nonfinite)));
    json_object_set_new(o, "nonfinite", json_integer((json_int_t)s->n_nonfinite));
    json_object_set_new(o, "reference_nan", json_integer((json_int_t)s->n_ref_nan));
    json_object_set_new(o, "first_bad", json_integer(s->pass || s->first_bad == VF_NONE
                                                         ? -1 : (json_int_t)s->first_bad));
    const struct vf_num nums[] = {
        {"max_abs_error", s->max_abs},
        {"max_rel_error", s->max_rel},
        {"error_at_worst", s->err_at_worst},
        {"bound_at_worst", s->bound_at_worst},
        {"worst_error_over_bound", s->worst_ratio},
        {"nmse", s->nmse},
        {"nmse_bound", s->nmse_bound},
        {"nmse_gate", s->nmse_gate},
        {"nmse_gate_fraction", s->gate_fraction},
    };
    set_nums(o, nf, nums, sizeof nums / sizeof nums[0]);
    json_object_set_new(o, "nmse_ok", json_boolean(s->nmse_ok));
    json_object_set_new(o, "guard_ok", json_boolean(!s->guard_bad));
    if (!s->pass) {
        char why[512];
        json_object_set_new(o, "reason", json_string(vf_stats_reason(s, why, sizeof why)));
    }
    return close_nums(o, nf);
}
