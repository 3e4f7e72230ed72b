/* exp_base_bound.c — how far does the all-ones RoPE score stay >= 0?
 *
 * Xu et al. 2024 ("Base of RoPE Bounds Context Length", arXiv:2405.14591,
 * §4) ask that similar tokens get more attention than random ones at every
 * distance m of the context; for i.i.d. q components that is
 * B(m) = sum_j cos(m theta_j) >= 0 for m = 0 .. L-1, and the lower bound of
 * the base for context length L is the smallest base satisfying it. B(m) is
 * not monotone in the base (Su 2024, kexue.fm/archives/10122: bisection
 * over the base fails), so, as the paper does, this kind goes the other way:
 * for the run's encoding (one base) it finds the first distance where the
 * score turns negative, i.e. the longest L the base allows. A sweep over a
 * grid of bases then gives, for each L, the smallest grid base whose first
 * negative distance is >= L (scripts/results_table.py --bound).
 *
 * The score is <R_r 1, R_0 1> = sum_j 2 af^2 cos(r theta_j) + (unrotated
 * dims) = 2 B(r) for plain RoPE: the all-ones vector is rotated on the
 * device (pe_vec_gpu_*, the encoding's precision mode) at positions
 * r = 0 .. max_distance, chunk by chunk, and every rotated element is
 * verified against the double reference (pe_vec_ref) within the registry's
 * bound (pe_vec_bound). The score is summed in double from the device
 * vectors; its error bound follows from the element bounds (sc_bound). A
 * device sign that differs from the reference's is accepted only where the
 * reference score is within that bound of 0 (fp32 cannot decide it). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exp/exp.h"
#include "pe/pe.h"
#include "verify/vf.h"

enum { P_MAX_DISTANCE, P_COUNT };
static const rl_param params[P_COUNT] = {
    [P_MAX_DISTANCE] = {.key = "max_distance", .type = RL_P_INT, .min = 1, .max = 16777215,
                        .def = "65536",
                        .help = "largest distance r scanned (r = 0, 1, ..., max_distance); the "
                                "scan stops at the chunk where the score first turns negative"},
};

#define BB_CHUNK 8192u  /* rows rotated per device call */
#define BB_LAUNCHES 16u /* device calls per pe_vec_gpu state */

static rl_status bb_max_of(const exp_run *run, uint64_t *maxr, rl_error *err)
{
    exp_value v[P_COUNT];
    rl_status st = exp_params_get("base_bound", params, P_COUNT, run, v, err);
    if (!st)
        *maxr = (uint64_t)v[P_MAX_DISTANCE].num;
    return st;
}

static rl_status bb_check(const exp_run *run, rl_error *err)
{
    uint64_t maxr;
    rope_freqs f;
    rl_status st = bb_max_of(run, &maxr, err);
    if (!st)
        st = exp_rope_freqs(run, maxr + 1, &f, err);
    return st;
}

static uint64_t bb_bytes(const exp_run *run)
{
    /* one chunk of one head: x, y (f32); ref, bound, scale (f64); device x, y */
    return (uint64_t)BB_CHUNK * run->model.head_dim * (4 + 4 + 8 + 8 + 8 + 8);
}

/* |s_dev - s_ref| <= sum_i (b_i (|c_i| + b0_i) + |a_i| b0_i) + hd 2^-52 sum |a_i||c_i|
 * for s = sum_i y_i y0_i, y within b of the reference a (row r) and y0 within
 * b0 of c (row 0): the product error expanded, plus the double sum's own
 * rounding (each product of two floats is exact in double). */
static double sc_bound(const double *a, const double *b, const double *c, const double *b0,
                       uint32_t hd)
{
    double e = 0, m = 0;
    for (uint32_t i = 0; i < hd; i++) {
        e += b[i] * (fabs(c[i]) + b0[i]) + fabs(a[i]) * b0[i];
        m += fabs(a[i]) * fabs(c[i]);
    }
    return e + hd * 0x1p-52 * m;
}

static rl_status bb_run(const exp_run *run, exp_ctx *ctx, exp_sink *sink, rl_error *err)
{
    if (!ctx->dev)
        return rl_fail(err, RL_ERR_ARG, "base_bound: needs a device");
    uint64_t maxr;
    pe_encoding *e = NULL;
    rl_status st = bb_max_of(run, &maxr, err);
    if (st || (st = exp_encoding_create(run, maxr + 1, &e, err)))
        return st;
    if (!pe_rope_freqs(e)) {
        pe_encoding_destroy(e);
        return rl_fail(err, RL_ERR_ARG,
                       "encoding '%s': base_bound studies the RoPE rotation and needs a "
                       "RoPE-family encoding, not '%s'", run->encoding_name, run->encoding_type);
    }
    uint32_t hd = run->model.head_dim;
    uint64_t n = (uint64_t)BB_CHUNK * hd;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    double *ref = malloc(n * sizeof *ref), *bnd = malloc(n * sizeof *bnd),
           *scale = malloc(n * sizeof *scale), *ref0 = malloc(hd * sizeof *ref0),
           *bnd0 = malloc(hd * sizeof *bnd0);
    float *y0 = malloc(hd * sizeof *y0);
    uint32_t *pos = malloc(BB_CHUNK * sizeof *pos);
    pe_vec_gpu g = {0};
    if (!x || !y || !ref || !bnd || !scale || !ref0 || !bnd0 || !y0 || !pos) {
        st = rl_fail(err, RL_ERR_NOMEM, "base_bound: out of host memory");
        goto done;
    }
    for (uint64_t i = 0; i < n; i++)
        x[i] = 1.0f;
    if ((st = pe_vec_gpu_create(ctx->dev, e, 1, &g, err)))
        goto done;
    const char *cols[] = {"distance_tokens", "min_score_device", "min_score_reference",
                          "score_error_bound"};
    if ((st = exp_sink_table(sink, "score_min", 4, cols, err)))
        goto done;
    vf_stats all = {0};
    int first = 1, guard_all = 1;
    uint64_t neg_dev = UINT64_MAX, neg_ref = UINT64_MAX, scanned = 0, n_undecided = 0,
             n_disagree_bad = 0;
    double worst_sc = 0, worst_sc_bound = 0, worst_sc_ratio = 0, min_dev = INFINITY,
           min_ref = INFINITY, undecided_max = 0;
    /* Scan chunk by chunk until both the device and the reference have seen
     * a negative score, or max_distance. */
    for (uint64_t r0 = 0; r0 <= maxr && (neg_dev == UINT64_MAX || neg_ref == UINT64_MAX);
         r0 += BB_CHUNK) {
        uint64_t rows = maxr - r0 + 1 < BB_CHUNK ? maxr - r0 + 1 : BB_CHUNK;
        for (uint64_t i = 0; i < rows; i++)
            pos[i] = (uint32_t)(r0 + i);
        /* A device state takes a bounded number of table-mode launches
         * (pe_rope.c's ring of cos/sin tables): start a fresh one every
         * BB_LAUNCHES chunks (any mode; the pipelines are the same). */
        if (r0 > 0 && (r0 / BB_CHUNK) % BB_LAUNCHES == 0) {
            pe_vec_gpu_destroy(&g);
            memset(&g, 0, sizeof g);
            if ((st = pe_vec_gpu_create(ctx->dev, e, 1, &g, err)))
                goto done;
        }
        int guard_ok = 0;
        if ((st = pe_vec_ref(e, x, pos, rows, 1, ref, err)) ||
            (st = pe_vec_gpu_apply(ctx->dev, &g, x, pos, rows, y, &guard_ok, err)))
            goto done;
        pe_vec_bound(e, x, pos, rows, 1, bnd, scale);
        vf_stats cs;
        vf_compare(y, ref, bnd, scale, rows * hd, VF_GATE_ELEM, &cs);
        vf_set_guard(&cs, guard_ok);
        guard_all &= guard_ok;
        if (first)
            all = cs;
        else
            vf_merge(&all, &cs);
        if (r0 == 0) { /* the key: the same vector at position 0 */
            memcpy(y0, y, hd * sizeof *y0);
            memcpy(ref0, ref, hd * sizeof *ref0);
            memcpy(bnd0, bnd, hd * sizeof *bnd0);
        }
        first = 0;
        double cmin_dev = INFINITY, cmin_ref = INFINITY, cbound = 0;
        for (uint64_t i = 0; i < rows; i++) {
            const float *yr = y + i * hd;
            const double *ar = ref + i * hd;
            double sd = 0, sr = 0;
            for (uint32_t k = 0; k < hd; k++) {
                sd += (double)yr[k] * y0[k];
                sr += ar[k] * ref0[k];
            }
            double b = sc_bound(ar, bnd + i * hd, ref0, bnd0, hd);
            double ediff = fabs(sd - sr);
            double ratio = b > 0 ? ediff / b : ediff > 0 ? INFINITY : 0;
            if (ratio >= worst_sc_ratio) {
                worst_sc_ratio = ratio;
                worst_sc = ediff;
                worst_sc_bound = b;
            }
            uint64_t r = r0 + i;
            if (sd < 0 && neg_dev == UINT64_MAX)
                neg_dev = r;
            if (sr < 0 && neg_ref == UINT64_MAX)
                neg_ref = r;
            if ((sd < 0) != (sr < 0)) {
                if (fabs(sr) <= b) {
                    n_undecided++;
                    undecided_max = fmax(undecided_max, fabs(sr) / hd);
                } else
                    n_disagree_bad++;
            }
            cmin_dev = fmin(cmin_dev, sd / hd);
            cmin_ref = fmin(cmin_ref, sr / hd);
            cbound = fmax(cbound, b / hd);
        }
        min_dev = fmin(min_dev, cmin_dev);
        min_ref = fmin(min_ref, cmin_ref);
        scanned = r0 + rows;
        double row[4] = {(double)(r0 + rows - 1), cmin_dev, cmin_ref, cbound};
        if ((st = exp_sink_row(sink, row, err)))
            goto done;
    }
    /* No negative score up to max_distance: the base allows any L up to
     * max_distance + 1 (m = 0 .. max_distance), reported as that. */
    double fd = neg_dev == UINT64_MAX ? (double)maxr + 1 : (double)neg_dev;
    double fr = neg_ref == UINT64_MAX ? (double)maxr + 1 : (double)neg_ref;
    exp_sink_metric(sink, "first_negative_distance", fd);
    exp_sink_metric(sink, "reference_first_negative_distance", fr);
    exp_sink_metric(sink, "nonnegative_to_max_distance", neg_dev == UINT64_MAX ? 1 : 0);
    exp_sink_metric(sink, "min_score_device", min_dev);
    exp_sink_metric(sink, "min_score_reference", min_ref);
    exp_sink_metric(sink, "scanned_distances", (double)scanned);
    exp_sink_metric(sink, "sign_undecided_rows", (double)n_undecided);
    exp_sink_metric(sink, "vector_max_abs_error", all.max_abs);
    exp_sink_metric(sink, "vector_worst_error_over_bound", all.worst_ratio);
    exp_sink_metric(sink, "score_worst_error_over_bound", worst_sc_ratio);
    exp_sink_verify_stats(sink, "rotated all-ones vectors: device vs double reference", &all,
                          guard_all ? "per element: the registry's bound (pe_vec_bound); NMSE "
                                      "gate 0.25 of the bounds' (vf.h)"
                                    : "kernel wrote past its output");
    int spass = worst_sc_ratio <= 1.0;
    exp_sink_verify(sink, "score <R_r 1, R_0 1>: device vectors vs double reference", worst_sc,
                    worst_sc_bound, spass,
                    "sum_i b_i(|c_i|+b0_i) + |a_i| b0_i + hd 2^-52 sum|a_i c_i|, from the element "
                    "bounds b (row r), b0 (row 0)");
    char detail[200];
    snprintf(detail, sizeof detail,
             "%llu rows with a different sign, all within the score's fp32 error bound of 0 "
             "(largest |score|/hd there %.3g)", (unsigned long long)n_undecided, undecided_max);
    exp_sink_verify(sink, "sign of the score: device vs double reference",
                    (double)n_disagree_bad, 0, n_disagree_bad == 0,
                    n_undecided ? detail : "the same sign at every scanned distance");
    if (!all.pass)
        st = rl_fail(err, RL_ERR_MISMATCH,
                     "base_bound: %zu of %zu rotated elements over bound (worst error/bound "
                     "%.3g)%s", all.n_over + all.n_nonfinite, all.n, all.worst_ratio,
                     guard_all ? "" : "; kernel wrote past its output");
    else if (!spass || n_disagree_bad)
        st = rl_fail(err, RL_ERR_MISMATCH,
                     "base_bound: device score off the reference by %.3g (bound %.3g), %llu "
                     "distances with a decidable sign differ", worst_sc, worst_sc_bound,
                     (unsigned long long)n_disagree_bad);
done:
    pe_vec_gpu_destroy(&g);
    pe_encoding_destroy(e);
    free(x), free(y), free(ref), free(bnd), free(scale), free(ref0), free(bnd0), free(y0),
        free(pos);
    return st;
}

/* Every metric and table column this kind emits: title, unit, how it is drawn. */
static const exp_metric metrics[] = {
    {"score_min.distance_tokens", "distance r", "tokens", RL_PLOT_LOGX},
    {"score_min.min_score_device", "smallest score <R_r 1, R_0 1> so far, device", "", 0},
    {"score_min.min_score_reference", "smallest score so far, double reference", "", RL_PLOT_REF},
    {"score_min.score_error_bound", "score error bound", "", RL_PLOT_HIDE},
    {"first_negative_distance", "first distance with a negative score, device", "tokens", 0},
    {"reference_first_negative_distance", "first distance with a negative score, reference",
     "tokens", 0},
    {"nonnegative_to_max_distance", "score >= 0 up to max_distance (1 = yes)", "", 0},
    {"min_score_device", "smallest score, device", "", 0},
    {"min_score_reference", "smallest score, double reference", "", 0},
    {"scanned_distances", "distances scanned", "tokens", RL_PLOT_HIDE},
    {"sign_undecided_rows", "rows whose sign the bound cannot decide", "", RL_PLOT_HIDE},
    {"vector_max_abs_error", "rotated vector max |error|", "", RL_PLOT_LOGY},
    {"vector_worst_error_over_bound", "rotated vector worst error / bound", "", RL_PLOT_ONE},
    {"score_worst_error_over_bound", "score worst error / bound", "", RL_PLOT_ONE},
};

const exp_kind exp_kind_base_bound = {
    .name = "base_bound",
    .about = "first distance where <R_r 1, R_0 1> (2 sum_j cos(r theta_j)) turns negative: the "
             "longest context a base allows (Xu et al. 2024), device and double reference",
    .params = params,
    .n_params = sizeof params / sizeof params[0],
    .uses_data = 0,
    .needs_gpu = 1,
    .check = bb_check,
    .estimate_bytes = bb_bytes,
    .run = bb_run,
    .metrics = metrics,
    .n_metrics = sizeof metrics / sizeof metrics[0],
};
