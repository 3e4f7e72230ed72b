/* exp_decay.c — RoFormer's long-term decay (Su et al. 2021, §3.4.3).
 *
 * For relative distance r the inner product of two rotated vectors is
 * Re[sum_j h_j conj(...) e^{i r theta_j}], and Abel summation bounds it by
 * (max_j |h_{j+1} - h_j|) * sum_j |S_j| with S_j = sum_{k<j} e^{i r theta_k}.
 * The table reports the relative upper bound (1/(d/2)) sum_{j=1}^{d/2} |S_j|
 * against r, plus the score of constant (all-ones) vectors, computed twice:
 * in closed form (each rotated pair contributes 2 s^2 cos(r theta_j), s the attention factor, each
 * unrotated dimension 1) and by rotating the vectors with the double CPU
 * reference (rope_ref_apply_d) at positions r and 0 — the two must agree. */
#include <complex.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>

#include "exp/exp.h"

enum { P_MAX_DISTANCE, P_STEP, P_COUNT };
static const rl_param params[P_COUNT] = {
    [P_MAX_DISTANCE] = {.key = "max_distance", .type = RL_P_INT, .min = 0, .max = 16777216,
                        .def = "1024",
                        .help = "largest relative distance r (r = 0, step, 2*step, ...)"},
    [P_STEP] = {.key = "step", .type = RL_P_INT, .min = 1, .max = 16777216, .def = "1",
                .help = "distance between consecutive r"},
};

/* The kind's typed parameters, defaults applied (exp_params_get). */
typedef struct decay_params {
    uint64_t max_distance, step;
} decay_params;

static rl_status decay_params_of(const exp_run *run, decay_params *p, rl_error *err)
{
    exp_value v[P_COUNT];
    rl_status st = exp_params_get("decay", params, P_COUNT, run, v, err);
    if (st)
        return st;
    *p = (decay_params){.max_distance = (uint64_t)v[P_MAX_DISTANCE].num,
                        .step = (uint64_t)v[P_STEP].num};
    return RL_OK;
}

#define DECAY_MAX_ROWS (1u << 20)

static rl_status decay_check(const exp_run *run, rl_error *err)
{
    rope_freqs f;
    decay_params p;
    rl_status st = decay_params_of(run, &p, err);
    if (!st)
        st = exp_rope_freqs(run, 0, &f, err);
    if (st)
        return st;
    double rows = floor((double)p.max_distance / (double)p.step) + 1;
    if (rows > DECAY_MAX_ROWS)
        return rl_fail_key(err, RL_ERR_LIMIT, "step",
                           "max_distance/step gives %.0f rows, more than the limit %u; raise step",
                           rows, DECAY_MAX_ROWS);
    return RL_OK;
}

static uint64_t decay_bytes(const exp_run *run)
{
    return (uint64_t)run->model.head_dim * 4 * sizeof(double);
}

/* (1/(d/2)) * sum_{j=1}^{d/2} |S_j|, S_j = sum_{k=0}^{j-1} e^{i r theta_k}. */
static double decay_bound(const rope_freqs *f, double r)
{
    double complex s = 0;
    double sum = 0;
    for (uint32_t j = 0; j < f->n_pairs; j++) {
        s += cexp(I * r * f->inv_freq[j]);
        sum += cabs(s);
    }
    return sum / f->n_pairs;
}

static rl_status decay_run(const exp_run *run, exp_ctx *ctx, exp_sink *sink, rl_error *err)
{
    (void)ctx;
    rope_freqs f;
    decay_params p;
    rl_status st;
    if ((st = decay_params_of(run, &p, err)) || (st = exp_rope_freqs(run, 0, &f, err)))
        return st;
    uint32_t hd = f.head_dim;
    double *ones = malloc(hd * sizeof *ones), *yq = malloc(hd * sizeof *yq),
           *yk = malloc(hd * sizeof *yk);
    if (!ones || !yq || !yk) {
        free(ones), free(yq), free(yk);
        return rl_fail(err, RL_ERR_NOMEM, "decay: out of host memory");
    }
    for (uint32_t i = 0; i < hd; i++)
        ones[i] = 1.0;
    const char *cols[] = {"r", "bound", "score_closed_form", "score_reference"};
    uint64_t maxr = p.max_distance, step = p.step;
    double worst = 0, worst_bound = 0, first_half = -1, b0 = 0, blast = 0, slast = 0;
    int pass = 1;
    st = exp_sink_table(sink, "decay", 4, cols, err);
    uint32_t pos0 = 0;
    rope_ref_apply_d(&f, ones, &pos0, 1, 1, yk);
    for (uint64_t r = 0; !st && r <= maxr; r += step) {
        double b = decay_bound(&f, (double)r);
        double closed = (double)(hd - f.rotary_dim);
        for (uint32_t j = 0; j < f.n_pairs; j++)
            closed += 2.0 * f.attention_factor * f.attention_factor * cos((double)r * f.inv_freq[j]);
        uint32_t pr = (uint32_t)r;
        rope_ref_apply_d(&f, ones, &pr, 1, 1, yq);
        double dot = 0;
        for (uint32_t i = 0; i < hd; i++)
            dot += yq[i] * yk[i];
        closed /= hd;
        dot /= hd;
        /* Both sides evaluate cos/sin of r*theta_j in double: the argument's
         * rounding is at most r*2^-53 (theta_j <= 1), sin/cos add ~1 ulp, and
         * the reference's rotation products and the two sums add rounding of
         * order hd*2^-53 each; normalised by hd the difference stays below
         * (r + 1) * 2^-50 + 2^-48, which is the bound used. */
        double bound = ((double)r + 1.0) * 0x1p-50 + 0x1p-48;
        double e = fabs(dot - closed);
        if (!(e <= bound))
            pass = 0;
        if (e > worst || r == 0) {
            worst = e;
            worst_bound = bound;
        }
        if (r == 0)
            b0 = b;
        if (first_half < 0 && b <= 0.5 * b0)
            first_half = (double)r;
        blast = b;
        slast = closed;
        double row[4] = {(double)r, b, closed, dot};
        st = exp_sink_row(sink, row, err);
    }
    free(ones), free(yq), free(yk);
    if (st)
        return st;
    exp_sink_metric(sink, "bound_r0", b0);
    exp_sink_metric(sink, "bound_rmax", blast);
    exp_sink_metric(sink, "score_rmax", slast);
    exp_sink_metric(sink, "r_bound_halved", first_half);
    exp_sink_verify(sink, "constant-vector score: reference rotation vs closed form", worst,
                    worst_bound, pass, "bound (r+1)*2^-50 + 2^-48, double rounding");
    if (!pass)
        return rl_fail(err, RL_ERR_MISMATCH,
                       "decay: reference score differs from the closed form by %.3g (bound %.3g)",
                       worst, worst_bound);
    return RL_OK;
}

/* Every metric and table column this kind emits: title, unit, how it is drawn. */
static const exp_metric metrics[] = {
    {"decay.r", "relative distance r", "tokens", 0},
    {"decay.bound", "RoFormer upper bound (relative)", "", 0},
    {"decay.score_closed_form", "constant-vector score, closed form", "", 0},
    {"decay.score_reference", "constant-vector score, reference", "", 0},
    {"bound_r0", "bound at r = 0", "", 0},
    {"bound_rmax", "bound at max_distance", "", 0},
    {"score_rmax", "score at max_distance", "", 0},
    {"r_bound_halved", "first r where the bound halves", "tokens", 0},
};

const exp_kind exp_kind_decay = {
    .name = "decay",
    .about = "RoFormer long-term decay: relative upper bound and constant-vector score vs r",
    .params = params,
    .n_params = sizeof params / sizeof params[0],
    .uses_data = 0,
    .needs_gpu = 0,
    .check = decay_check,
    .estimate_bytes = decay_bytes,
    .run = decay_run,
    .metrics = metrics,
    .n_metrics = sizeof metrics / sizeof metrics[0],
};
