/* exp_invariance.c — does the score depend only on i - j?
 *
 * For q/k pairs from the run's data source, the score of the transformed
 * vectors <f(q, m), f(k, n)> is compared with <f(q, m + t), f(k, n + t)> for
 * shifts t = 1, 2, 4, ..., 2^max_shift_log2. A relative encoding (RoPE and
 * its scalings: R(m)^T R(n) = R(n - m), Su et al. 2021 eq. 16; nope) keeps
 * the difference at rounding level; an additive absolute encoding (Vaswani
 * et al. 2017; learned tables) adds the cross terms <q, P_n> + <P_m, k> that
 * depend on m and n themselves, an O(1) change.
 *
 * Every transform is computed twice: on the device (pe_vec_gpu_*, the
 * encoding's precision mode; queries as queries and keys as keys, pe_role)
 * and by the double CPU reference (pe_vec_ref_role);
 * both curves are reported. The device vectors are verified element-wise
 * against the reference with the registry's bound (pe_vec_bound). For
 * relative encodings the reference curve is also checked against its double
 * rounding bound (derived at inv_bound below). Scores are accumulated in
 * double in both cases; "relative" divides by ||f(q, m)|| ||f(k, n)|| from
 * the reference (the Cauchy-Schwarz scale of the score). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify/vf.h"
#include "exp/exp.h"
#include "pe/pe.h"

enum { P_PAIRS, P_M, P_N, P_MAX_SHIFT_LOG2, P_COUNT };
static const rl_param params[P_COUNT] = {
    [P_PAIRS] = {.key = "pairs", .type = RL_P_INT, .min = 1, .max = 4096, .def = "16",
                 .help = "q/k pairs (rows of the data source); every query head of each pair is "
                         "scored"},
    [P_M] = {.key = "m", .type = RL_P_INT, .min = 0, .max = 8388608, .def = "64",
             .help = "query position before the shift"},
    [P_N] = {.key = "n", .type = RL_P_INT, .min = 0, .max = 8388608, .def = "0",
             .help = "key position before the shift"},
    [P_MAX_SHIFT_LOG2] = {.key = "max_shift_log2", .type = RL_P_INT, .min = 0, .max = 23,
                          .def = "20", .help = "shifts t = 1, 2, 4, ..., 2^max_shift_log2"},
};
/* The ranges keep max(m, n) + 2^max_shift_log2 <= 2^24: every position is
 * exact in fp32, as the kernels take it. */

/* The kind's typed parameters, defaults applied (exp_params_get). */
typedef struct inv_params {
    uint64_t pairs;
    uint32_t m, n, max_shift_log2;
} inv_params;

static rl_status inv_params_of(const exp_run *run, inv_params *p, rl_error *err)
{
    exp_value v[P_COUNT];
    rl_status st = exp_params_get("invariance", params, P_COUNT, run, v, err);
    if (!st)
        *p = (inv_params){.pairs = (uint64_t)v[P_PAIRS].num, .m = (uint32_t)v[P_M].num,
                          .n = (uint32_t)v[P_N].num,
                          .max_shift_log2 = (uint32_t)v[P_MAX_SHIFT_LOG2].num};
    return st;
}

static uint64_t inv_maxpos(const inv_params *p)
{
    return (uint64_t)(p->m > p->n ? p->m : p->n) + ((uint64_t)1 << p->max_shift_log2);
}

static rl_status inv_encoding(const exp_run *run, const inv_params *p, pe_encoding **e,
                              rl_error *err)
{
    rl_status st = exp_encoding_create(run, inv_maxpos(p) + 1, e, err);
    if (st)
        return st;
    if (pe_has_bias(*e)) {
        pe_encoding_destroy(*e);
        *e = NULL;
        return rl_fail(err, RL_ERR_ARG,
                       "encoding '%s': invariance studies the vector transform f(x, pos); '%s' "
                       "acts on the logits (a bias of the positions), which has no f to shift",
                       run->encoding_name, run->encoding_type);
    }
    return RL_OK;
}

static rl_status inv_check(const exp_run *run, rl_error *err)
{
    inv_params p;
    pe_encoding *e = NULL;
    rl_status st = inv_params_of(run, &p, err);
    if (!st)
        st = inv_encoding(run, &p, &e, err);
    pe_encoding_destroy(e);
    return st;
}

static uint64_t inv_rows(const inv_params *p)
{
    return (uint64_t)p->max_shift_log2 + 2;
}

static uint64_t inv_bytes(const exp_run *run)
{
    inv_params p;
    rl_error err;
    if (inv_params_of(run, &p, &err))
        return 0; /* refused by inv_check before any estimate is used */
    uint64_t n = 2 * inv_rows(&p) * p.pairs * run->model.heads * run->model.head_dim;
    /* host: x, y (f32), ref, bound, scale (f64); device: x, y */
    return n * (4 + 4 + 8 + 8 + 8) + n * 8;
}

/* Double rounding bound of |s_ref(m+t, n+t) - s_ref(m, n)| for a relative
 * encoding, s_ref the reference score. Each rotated element of the
 * reference, y = s (a cos phi - b sin phi) with phi = fl(p theta_j), is off
 * from the exact rotation by at most s M (phi 2^-53 + 2^-51), M = |a| + |b|:
 * the angle's one rounding (relative 2^-53, theta_j taken as given) moves
 * y by s M |dphi|; cos/sin (< 1 ulp each), the two products, the
 * difference and the attention factor add a few units of 2^-53 of s M.
 * Summing y_q y_k over head_dim terms in double adds head_dim 2^-53 of
 * sum |y_q||y_k| <= A, A = sum_j s^2 Mq_j Mk_j + sum_unrotated |q_i k_i|.
 * So one score is within A (eps(p_q) + eps(p_k) + hd 2^-53) of the exact
 * rotation-invariant value, eps(p) = p theta_max 2^-53 + 2^-51, and the
 * difference of two scores within the sum of both; a factor 2 covers the
 * terms of second order. nope: theta_max = 0, s = 1. */
static double inv_bound(const rope_freqs *f, uint32_t hd, const float *q, const float *k,
                        double pm, double pn, double t)
{
    double A = 0, tmax = 0, s2 = 1;
    uint32_t r = 0;
    if (f) {
        s2 = f->attention_factor * f->attention_factor;
        r = f->rotary_dim;
        for (uint32_t j = 0; j < f->n_pairs; j++) {
            tmax = fmax(tmax, f->inv_freq[j]);
            uint32_t ia = f->layout == RL_ROPE_LAYOUT_HALF ? j : 2 * j;
            uint32_t ib = f->layout == RL_ROPE_LAYOUT_HALF ? j + r / 2 : 2 * j + 1;
            A += s2 * (fabs(q[ia]) + fabs(q[ib])) * (fabs(k[ia]) + fabs(k[ib]));
        }
    }
    for (uint32_t i = r; i < hd; i++)
        A += fabs((double)q[i] * k[i]);
#define EPS(p) ((p) * tmax * 0x1p-53 + 0x1p-51)
    double e = EPS(pm) + EPS(pn) + EPS(pm + t) + EPS(pn + t) + 2.0 * hd * 0x1p-53;
#undef EPS
    return 2.0 * A * e;
}

static double dot_f(const float *a, const float *b, uint32_t n)
{
    double s = 0;
    for (uint32_t i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

static double dot_d(const double *a, const double *b, uint32_t n)
{
    double s = 0;
    for (uint32_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

static rl_status inv_run(const exp_run *run, exp_ctx *ctx, exp_sink *sink, rl_error *err)
{
    if (!ctx->dev)
        return rl_fail(err, RL_ERR_ARG, "invariance: needs a device");
    pe_encoding *e = NULL;
    inv_params p;
    rl_status st = inv_params_of(run, &p, err);
    if (st || (st = inv_encoding(run, &p, &e, err)))
        return st;
    const rope_freqs *rf = pe_rope_freqs(e);
    /* cache_consistent rotations are not relative: each position has its
     * own scale, so a shift changes the score by design; nor is mRoPE whose
     * token indices map to 3-D positions (rope_freqs_index_relative) */
    int relative = (rf != NULL && rope_freqs_index_relative(rf)) || !pe_has_vectors(e);
    uint32_t H = run->model.heads, KV = run->model.kv_heads ? run->model.kv_heads : H,
             hd = run->model.head_dim, L = p.max_shift_log2;
    uint64_t P = p.pairs, S = inv_rows(&p), half = S * P,
             T = 2 * half, row = (uint64_t)H * hd, n = T * row;
    uint32_t m = p.m, nk = p.n;
    float *q = malloc(P * row * sizeof *q), *k = malloc(P * KV * hd * sizeof *k),
          *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    double *ref = malloc(n * sizeof *ref), *bound = malloc(n * sizeof *bound),
           *scale = malloc(n * sizeof *scale), *shift = malloc(S * sizeof *shift);
    uint32_t *pos = malloc(T * sizeof *pos);
    pe_vec_gpu g[2] = {{0}, {0}};
    if (!q || !k || !x || !y || !ref || !bound || !scale || !shift || !pos) {
        st = rl_fail(err, RL_ERR_NOMEM, "invariance: out of host memory for %llu elements",
                     (unsigned long long)n);
        goto done;
    }
    if ((st = run->data(run->data_user, 'q', P, q, err)) ||
        (st = run->data(run->data_user, 'k', P, k, err)))
        goto done;
    /* x: [2][S][P][H][hd]: queries at m + t_s, then keys (each query head's
     * kv head, h / (H / KV)) at n + t_s. */
    for (uint64_t s = 0; s < S; s++) {
        shift[s] = s == 0 ? 0.0 : ldexp(1.0, (int)s - 1);
        for (uint64_t p = 0; p < P; p++) {
            uint64_t tq = s * P + p, tk = half + tq;
            pos[tq] = m + (uint32_t)shift[s];
            pos[tk] = nk + (uint32_t)shift[s];
            for (uint32_t h = 0; h < H; h++) {
                memcpy(x + (tq * H + h) * hd, q + (p * H + h) * hd, hd * sizeof *x);
                memcpy(x + (tk * H + h) * hd, k + (p * KV + h / (H / KV)) * hd, hd * sizeof *x);
            }
        }
    }
    /* Queries (first half) as queries, keys as keys (xpos scales them
     * differently: pe_role). */
    int guard_ok = 1;
    for (int r = 0; r < 2; r++) {
        pe_role role = r ? PE_ROLE_K : PE_ROLE_Q;
        uint64_t o = r * half * row;
        const uint32_t *ph = pos + r * half;
        int gok = 0;
        if ((st = pe_vec_ref_role(e, role, x + o, ph, half, H, ref + o, err)))
            goto done;
        pe_vec_bound_role(e, role, x + o, ph, half, H, bound + o, scale + o);
        if ((st = pe_vec_gpu_create_role(ctx->dev, e, H, role, &g[r], err)) ||
            (st = pe_vec_gpu_apply(ctx->dev, &g[r], x + o, ph, half, y + o, &gok, err)))
            goto done;
        guard_ok &= gok;
    }
    vf_stats cs;
    vf_compare(y, ref, bound, scale, n, VF_GATE_ELEM, &cs);
    vf_set_guard(&cs, guard_ok);

    /* Column names are identifiers (exp_sink); units are suffixes. "rel" is
     * relative to ||f(q, m)|| ||f(k, n)||. */
    const char *cols[] = {"shift_t_tokens",         "device_abs_change",
                          "device_rel_change",      "reference_abs_change",
                          "reference_rel_change",   "reference_rel_rounding_bound"};
    if ((st = exp_sink_table(sink, "invariance", 6, cols, err)))
        goto done;
    double worst_ratio = 0, ratio_bound = 0, ratio_err = 0, gmax = 0, rmax = 0, grel = 0,
           rrel = 0;
    for (uint64_t s = 1; s < S && !st; s++) {
        double ga = 0, gr = 0, ra = 0, rr = 0, br = 0;
        for (uint64_t p = 0; p < P; p++)
            for (uint32_t h = 0; h < H; h++) {
                uint64_t q0 = (p * H + h) * hd, k0 = ((half + p) * H + h) * hd;
                uint64_t qs = ((s * P + p) * H + h) * hd, ks = ((half + s * P + p) * H + h) * hd;
                double nq = sqrt(dot_d(ref + q0, ref + q0, hd)),
                       nkk = sqrt(dot_d(ref + k0, ref + k0, hd));
                double norm = nq * nkk > 0 ? nq * nkk : 1.0;
                double dg = fabs(dot_f(y + qs, y + ks, hd) - dot_f(y + q0, y + k0, hd));
                double dr = fabs(dot_d(ref + qs, ref + ks, hd) - dot_d(ref + q0, ref + k0, hd));
                ga = fmax(ga, dg), gr = fmax(gr, dg / norm);
                ra = fmax(ra, dr), rr = fmax(rr, dr / norm);
                if (relative) {
                    double b = inv_bound(rf, hd, x + qs, x + ks, m, nk, shift[s]);
                    br = fmax(br, b / norm);
                    double ratio = b > 0 ? dr / b : dr > 0 ? INFINITY : 0;
                    if (ratio >= worst_ratio) {
                        worst_ratio = ratio;
                        ratio_err = dr;
                        ratio_bound = b;
                    }
                }
            }
        gmax = fmax(gmax, ga), rmax = fmax(rmax, ra), grel = fmax(grel, gr), rrel = fmax(rrel, rr);
        double r6[6] = {shift[s], ga, gr, ra, rr, relative ? br : NAN};
        st = exp_sink_row(sink, r6, err);
    }
    if (st)
        goto done;
    exp_sink_metric(sink, "device_max_abs_change", gmax);
    exp_sink_metric(sink, "device_max_rel_change", grel);
    exp_sink_metric(sink, "reference_max_abs_change", rmax);
    exp_sink_metric(sink, "reference_max_rel_change", rrel);
    exp_sink_metric(sink, "vector_max_abs_error", cs.max_abs);
    exp_sink_metric(sink, "vector_worst_error_over_bound", cs.worst_ratio);
    exp_sink_metric(sink, "max_shift", ldexp(1.0, (int)L));
    int vpass = cs.pass;
    char what[160];
    snprintf(what, sizeof what, "transformed q/k: device vs double reference (%s%s%s)",
             pe_encoding_family(e)->name,
             rf ? ", " : "", rf ? rope_precision_name(rf->precision) : "");
    exp_sink_verify_stats(sink, what, &cs,
                          guard_ok ? "per element: the registry's bound (pe_vec_bound); NMSE "
                                     "gate 0.25 of the bounds' (vf.h)"
                                   : "kernel wrote past its output");
    int rpass = 1;
    if (relative) {
        rpass = worst_ratio <= 1.0;
        exp_sink_metric(sink, "reference_change_over_rounding_bound", worst_ratio);
        exp_sink_verify(sink, "reference score of a relative encoding: unchanged by the shift",
                        ratio_err, ratio_bound, rpass,
                        "2 A (eps(m)+eps(n)+eps(m+t)+eps(n+t) + 2 hd 2^-53), eps(p) = p "
                        "theta_max 2^-53 + 2^-51, A = sum s^2 |q||k| per pair");
    }
    if (!vpass)
        st = rl_fail(err, RL_ERR_MISMATCH,
                     "invariance: %zu of %zu transformed elements over bound (worst error/bound "
                     "%.3g, NMSE %.3g, gate %.3g)%s", cs.n_over + cs.n_nonfinite, cs.n,
                     cs.worst_ratio, cs.nmse, cs.nmse_gate,
                     guard_ok ? "" : "; kernel wrote past its output");
    else if (!rpass)
        st = rl_fail(err, RL_ERR_MISMATCH,
                     "invariance: the reference score of a relative encoding changed by %.3g "
                     "under a shift, beyond its rounding bound %.3g", ratio_err, ratio_bound);
done:
    pe_vec_gpu_destroy(&g[0]);
    pe_vec_gpu_destroy(&g[1]);
    pe_encoding_destroy(e);
    free(q), free(k), free(x), free(y), free(ref), free(bound), free(scale), free(shift), free(pos);
    return st;
}

/* Every metric and table column this kind emits: title, unit, how it is drawn. */
static const exp_metric metrics[] = {
    {"invariance.shift_t_tokens", "shift t", "tokens", RL_PLOT_LOGX},
    {"invariance.device_abs_change", "score change under shift, device", "q·k", RL_PLOT_LOGY},
    {"invariance.device_rel_change", "score change under shift / (|q'||k'|), device",
     "", RL_PLOT_LOGY},
    {"invariance.reference_abs_change", "score change under shift, double reference",
     "q·k", RL_PLOT_LOGY},
    {"invariance.reference_rel_change", "score change under shift / (|q'||k'|), reference",
     "", RL_PLOT_LOGY},
    {"invariance.reference_rel_rounding_bound", "rounding bound of the relative change",
     "", RL_PLOT_REF | RL_PLOT_LOGY},
    {"device_max_abs_change", "max score change, device", "q·k", 0},
    {"device_max_rel_change", "max relative score change, device", "", 0},
    {"reference_max_abs_change", "max score change, reference", "q·k", 0},
    {"reference_max_rel_change", "max relative score change, reference", "", 0},
    {"vector_max_abs_error", "rotated vectors: max abs error", "", 0},
    {"vector_worst_error_over_bound", "rotated vectors: worst error / bound", "", 0},
    {"max_shift", "largest shift", "tokens", 0},
    {"reference_change_over_rounding_bound", "reference change / rounding bound", "", 0},
};

/* Rows of each tensor the run reads: pairs. */
static uint64_t inv_data_rows(const exp_run *run)
{
    inv_params p;
    rl_error err = {0};
    return inv_params_of(run, &p, &err) ? 0 : (uint64_t)p.pairs;
}

const exp_kind exp_kind_invariance = {
    .name = "invariance",
    .about = "|<f(q,m),f(k,n)> - <f(q,m+t),f(k,n+t)>| vs shift t, device and double reference",
    .params = params,
    .n_params = sizeof params / sizeof params[0],
    .uses_data = 1,
    .needs_gpu = 1,
    .check = inv_check,
    .estimate_bytes = inv_bytes,
    .run = inv_run,
    .metrics = metrics,
    .n_metrics = sizeof metrics / sizeof metrics[0],
    .data_rows = inv_data_rows,
};
