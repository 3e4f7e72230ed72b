/* exp_precision.c — GPU against double-reference error of rotated vectors
 * against position (the cross-vendor view of issue 7, fp32-angle kernel).
 *
 * Q rows from the run's data source are placed at positions spread
 * geometrically from 0 to 2^max_pos_log2, rotated on the device
 * (rope_gpu_apply) and by the double CPU reference (rope_ref_apply). Each
 * row reports its worst absolute error and the per-element bound of the
 * kernel in the encoding's precision mode (rope_error_bounds: fp32 angle
 * rounding + Vulkan's 2^-11 sin/cos bound + 4 ulp of the pair magnitude in
 * fp32 mode, 4 ulp in table/precise). The run passes verification when
 * every element is within its bound. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "verify/vf.h"
#include "exp/exp.h"

enum { P_TOKENS, P_MAX_POS_LOG2, P_COUNT };
static const rl_param params[P_COUNT] = {
    [P_TOKENS] = {.key = "tokens", .type = RL_P_INT, .min = 1, .max = 16777216, .def = "64",
                  .help = "rows (positions) rotated"},
    [P_MAX_POS_LOG2] = {.key = "max_pos_log2", .type = RL_P_INT, .min = 0, .max = 24,
                        .def = "20",
                        .help = "largest position is 2^max_pos_log2 (fp32 positions are exact "
                                "up to 2^24)"},
};

/* The kind's typed parameters, defaults applied (exp_params_get). */
typedef struct precision_params {
    uint64_t tokens;
    uint32_t max_pos_log2;
} precision_params;

static rl_status precision_params_of(const exp_run *run, precision_params *p, rl_error *err)
{
    exp_value v[P_COUNT];
    rl_status st = exp_params_get("precision", params, P_COUNT, run, v, err);
    if (!st)
        *p = (precision_params){.tokens = (uint64_t)v[P_TOKENS].num,
                                .max_pos_log2 = (uint32_t)v[P_MAX_POS_LOG2].num};
    return st;
}

static rl_status precision_check(const exp_run *run, rl_error *err)
{
    rope_freqs f;
    precision_params p;
    rl_status st = precision_params_of(run, &p, err);
    return st ? st : exp_rope_freqs(run, p.tokens, &f, err);
}

static uint64_t precision_bytes(const exp_run *run)
{
    precision_params p;
    rl_error err;
    if (precision_params_of(run, &p, &err))
        return 0; /* refused by precision_check before any estimate is used */
    uint64_t n = p.tokens * run->model.heads * run->model.head_dim;
    /* host: x, y (f32), ref, bound, scale (f64); device: x, y */
    return n * (4 + 4 + 8 + 8 + 8) + n * 8;
}

/* Position of row t of T: 0, then geometric up to 2^L. */
static uint32_t row_pos(uint64_t t, uint64_t T, uint32_t L)
{
    if (t == 0 || T < 2)
        return 0;
    double p = pow(2.0, (double)L * (double)t / (double)(T - 1));
    return (uint32_t)fmin(p, 16777216.0);
}

static rl_status precision_run(const exp_run *run, exp_ctx *ctx, exp_sink *sink, rl_error *err)
{
    rope_freqs f;
    precision_params p;
    rl_status st;
    if ((st = precision_params_of(run, &p, err)) || (st = exp_rope_freqs(run, p.tokens, &f, err)))
        return st;
    if (!ctx->dev)
        return rl_fail(err, RL_ERR_ARG, "precision: needs a device");
    uint64_t T = p.tokens;
    uint32_t L = p.max_pos_log2, H = run->model.heads;
    if ((st = rope_gpu_check_shape(ctx->dev, &f, T, H, err)))
        return st;
    uint64_t row = (uint64_t)H * f.head_dim, n = T * row;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    double *ref = malloc(n * sizeof *ref), *bound = malloc(n * sizeof *bound),
           *scale = malloc(n * sizeof *scale);
    uint32_t *pos = malloc(T * sizeof *pos);
    rope_kernel k = {0};
    int have_kernel = 0;
    if (!x || !y || !ref || !bound || !scale || !pos) {
        st = rl_fail(err, RL_ERR_NOMEM, "precision: out of host memory for %llu elements",
                     (unsigned long long)n);
        goto done;
    }
    if ((st = run->data(run->data_user, 'q', T, x, err)))
        goto done;
    for (uint64_t t = 0; t < T; t++)
        pos[t] = row_pos(t, T, L);
    if ((st = rope_kernel_create(ctx->dev, &k, err)))
        goto done;
    have_kernel = 1;
    double gpu_ns = -1;
    int guard_ok = 0;
    if ((st = rope_gpu_apply(ctx->dev, &k, &f, x, pos, T, H, y, &gpu_ns, &guard_ok, err)))
        goto done;
    rope_ref_apply(&f, x, pos, T, H, ref);
    rope_error_bounds(&f, x, pos, T, H, bound, scale);
    vf_stats s;
    vf_compare(y, ref, bound, scale, n, VF_GATE_ELEM, &s);
    vf_set_guard(&s, guard_ok);
    const char *cols[] = {"position", "max_abs_error", "bound", "error_over_bound"};
    if ((st = exp_sink_table(sink, "precision", 4, cols, err)))
        goto done;
    for (uint64_t t = 0; t < T && !st; t++) {
        double me = 0, mb = 0, ratio = 0;
        for (uint64_t i = t * row; i < (t + 1) * row; i++) {
            double e = fabs((double)y[i] - ref[i]);
            if (!isfinite(e))
                e = INFINITY;
            me = fmax(me, e);
            mb = fmax(mb, bound[i]);
            if (bound[i] > 0)
                ratio = fmax(ratio, e / bound[i]);
            else if (e > 0)
                ratio = INFINITY;
        }
        double r[4] = {(double)pos[t], me, mb, ratio};
        st = exp_sink_row(sink, r, err);
    }
    if (st)
        goto done;
    exp_sink_metric(sink, "max_abs_error", s.max_abs);
    exp_sink_metric(sink, "worst_error_over_bound", s.worst_ratio);
    exp_sink_metric(sink, "nmse", s.nmse);
    exp_sink_metric(sink, "gpu_ms", gpu_ns >= 0 ? gpu_ns * 1e-6 : NAN);
    int pass = s.pass;
    char what[96];
    snprintf(what, sizeof what, "rotated q: device (%s angles) vs double reference",
             rope_precision_name(f.precision));
    char detail[200];
    snprintf(detail, sizeof detail, "%s; max abs error over all elements %.3g",
             !guard_ok ? "kernel wrote past its output"
             : f.precision == RL_ROPE_PREC_FP32
                 ? "per element: s*M*(|phi|*2^-23 + 2^-11) + 4 ulp(s*M), M = |x_a|+|x_b|"
                 : "per element: 4 ulp(s*M), M = |x_a|+|x_b|",
             s.max_abs);
    exp_sink_verify_stats(sink, what, &s, detail);
    if (!pass)
        st = rl_fail(err, RL_ERR_MISMATCH,
                     "precision: %zu of %zu elements over bound (first at %zu, worst error/bound "
                     "%.3g, NMSE %.3g, gate %.3g)%s", s.n_over + s.n_nonfinite, s.n,
                     s.first_bad, s.worst_ratio, s.nmse, s.nmse_gate,
                     guard_ok ? "" : "; kernel wrote past its output");
done:
    if (have_kernel)
        rope_kernel_destroy(ctx->dev, &k);
    free(x), free(y), free(ref), free(bound), free(scale), free(pos);
    return st;
}

/* Every metric and table column this kind emits: title, unit, how it is drawn. */
static const exp_metric metrics[] = {
    {"precision.position", "position", "tokens", RL_PLOT_LOGX},
    {"precision.max_abs_error", "max abs error of rotated q vs double", "", RL_PLOT_LOGY},
    {"precision.bound", "error bound", "", RL_PLOT_LOGY},
    {"precision.error_over_bound", "error / bound", "", RL_PLOT_ONE},
    {"max_abs_error", "max abs error", "", 0},
    {"worst_error_over_bound", "worst error / bound", "", 0},
    {"nmse", "NMSE", "", 0},
    {"gpu_ms", "GPU time", "ms", 0},
};

/* Rows of each tensor the run reads: tokens. */
static uint64_t precision_rows(const exp_run *run)
{
    precision_params p;
    rl_error err = {0};
    return precision_params_of(run, &p, &err) ? 0 : (uint64_t)p.tokens;
}

const exp_kind exp_kind_precision = {
    .name = "precision",
    .about = "device vs double-reference error of rotated q against position",
    .params = params,
    .n_params = sizeof params / sizeof params[0],
    .uses_data = 1,
    .needs_gpu = 1,
    .check = precision_check,
    .estimate_bytes = precision_bytes,
    .run = precision_run,
    .metrics = metrics,
    .n_metrics = sizeof metrics / sizeof metrics[0],
    .data_rows = precision_rows,
};
