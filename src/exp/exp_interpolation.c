/* exp_interpolation.c — Position Interpolation vs extrapolation of a fitted
 * attention score (Chen et al. 2023, "Extending Context Window of Large
 * Language Models via Positional Interpolation", arXiv:2306.15595, §2.3 and
 * Figure 2).
 *
 * With RoPE the score of a query/key pair at relative distance s is
 *     a(s) = Re sum_{j=0}^{d/2-1} h_j e^{i s theta_j}       (their eq. 3)
 * for complex h_j fixed by q and k. Chen et al. fit a(s) by least squares to
 * random targets in [-1, 1] at the integer points s = 0 .. L and show that
 * the fit, bounded inside [0, L], explodes beyond L (extrapolation, up to
 * thousands), while between integer points inside [0, L] (interpolation,
 * what PI does) it stays of the size of the targets.
 *
 * Here, in double on the CPU: theta_j from the run's encoding (the
 * registry's rope_freqs; their setting is d = 128, base 10000, L = 2048),
 * L = the model's train_len, targets drawn from rl_rng(seed + draw * 0x9E3779B97F4A7C15,
 * "interpolation/targets") uniform in [-1, 1]. The least-squares problem min ||A h - y||,
 * A = [cos(s theta_j), -sin(s theta_j)] ((L+1) x d), is ill-conditioned
 * (low frequencies give nearly equal columns), so it is solved like
 * numpy.linalg.lstsq: the minimum-norm solution over the singular values
 * above rcond times the largest (default max(L+1, d) 2^-52, numpy's), from a
 * one-sided Jacobi SVD. How far the extrapolation explodes depends on rcond
 * (the near-null directions it keeps); the interpolation does not. Tables: the fitted a(s) at integer s in [0, eval_factor L] (with the
 * targets inside [0, L]) and at the half-integers s + 1/2 inside [0, L]. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/rl_util.h"
#include "exp/exp.h"

enum { P_EVAL_FACTOR, P_STEP, P_RCOND_EXP, P_DRAW, P_COUNT };
static const rl_param params[P_COUNT] = {
    [P_EVAL_FACTOR] = {.key = "eval_factor", .type = RL_P_NUM, .min = 1, .max = 64,
                       .def = "2", .help = "extrapolate the fit to eval_factor * train_len"},
    [P_STEP] = {.key = "step", .type = RL_P_INT, .min = 1, .max = 1048576, .def = "1",
                .help = "distance between tabulated integer positions"},
    [P_RCOND_EXP] = {.key = "rcond_exp", .type = RL_P_INT, .min = 0, .max = 15, .def = "0",
                     .help = "rcond = 10^-rcond_exp: singular values below rcond * largest are "
                             "dropped; 0: numpy.linalg.lstsq's default rcond max(L+1, d) * "
                             "2^-52"},
    [P_DRAW] = {.key = "draw", .type = RL_P_INT, .min = 0, .max = 1000000, .def = "0",
                .help = "which random target set (sweep it for several independent fits)"},
};

/* The kind's typed parameters, defaults applied (exp_params_get). */
typedef struct interp_params {
    double eval_factor;
    uint64_t step, draw;
    uint32_t rcond_exp;
} interp_params;

static rl_status interp_params_of(const exp_run *run, interp_params *p, rl_error *err)
{
    exp_value v[P_COUNT];
    rl_status st = exp_params_get("interpolation", params, P_COUNT, run, v, err);
    if (!st)
        *p = (interp_params){.eval_factor = v[P_EVAL_FACTOR].num,
                             .step = (uint64_t)v[P_STEP].num,
                             .draw = (uint64_t)v[P_DRAW].num,
                             .rcond_exp = (uint32_t)v[P_RCOND_EXP].num};
    return st;
}

#define INTERP_MAX_ROWS 65537u

static rl_status interp_check(const exp_run *run, rl_error *err)
{
    rope_freqs f;
    interp_params p;
    rl_status st = interp_params_of(run, &p, err);
    if (st || (st = exp_rope_freqs(run, 0, &f, err)))
        return st;
    if (run->model.train_len + 1 > INTERP_MAX_ROWS)
        return rl_fail(err, RL_ERR_LIMIT,
                       "interpolation: train_len %u gives a %u-row least-squares problem, more "
                       "than the limit %u", run->model.train_len, run->model.train_len + 1,
                       INTERP_MAX_ROWS - 1);
    return RL_OK;
}

static uint64_t interp_bytes(const exp_run *run)
{
    uint64_t m = run->model.train_len + 1ull, n = run->model.head_dim;
    return (m * n + n * n + 3 * m + 2 * n) * sizeof(double);
}

/* a(s) = sum_j c_j cos(s theta_j) - d_j sin(s theta_j), h_j = c_j + i d_j. */
static double score(const rope_freqs *f, const double *h, double s)
{
    double a = 0;
    for (uint32_t j = 0; j < f->n_pairs; j++)
        a += h[2 * j] * cos(s * f->inv_freq[j]) - h[2 * j + 1] * sin(s * f->inv_freq[j]);
    return a;
}

/* One-sided Jacobi SVD (Hestenes): rotates column pairs of a (m x n,
 * column-major) until all are orthogonal to relative 2^-50; then a = U S,
 * the columns' norms are the singular values and v (n x n, column-major)
 * holds the right singular vectors. Returns the sweeps used. */
static int jacobi_svd(double *a, uint32_t m, uint32_t n, double *v)
{
    memset(v, 0, (size_t)n * n * sizeof *v);
    for (uint32_t i = 0; i < n; i++)
        v[(size_t)i * n + i] = 1.0;
    int sweep;
    for (sweep = 1; sweep <= 60; sweep++) {
        int rotated = 0;
        for (uint32_t p = 0; p + 1 < n; p++)
            for (uint32_t q = p + 1; q < n; q++) {
                double *ap = a + (size_t)p * m, *aq = a + (size_t)q * m;
                double alpha = 0, beta = 0, gamma = 0;
                for (uint32_t i = 0; i < m; i++) {
                    alpha += ap[i] * ap[i];
                    beta += aq[i] * aq[i];
                    gamma += ap[i] * aq[i];
                }
                if (gamma == 0 || fabs(gamma) <= 0x1p-50 * sqrt(alpha * beta))
                    continue;
                rotated = 1;
                double zeta = (beta - alpha) / (2 * gamma);
                double t = (zeta >= 0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1 + zeta * zeta));
                double c = 1 / sqrt(1 + t * t), s = c * t;
                for (uint32_t i = 0; i < m; i++) {
                    double x = ap[i], y = aq[i];
                    ap[i] = c * x - s * y;
                    aq[i] = s * x + c * y;
                }
                double *vp = v + (size_t)p * n, *vq = v + (size_t)q * n;
                for (uint32_t i = 0; i < n; i++) {
                    double x = vp[i], y = vq[i];
                    vp[i] = c * x - s * y;
                    vq[i] = s * x + c * y;
                }
            }
        if (!rotated)
            break;
    }
    return sweep;
}

static rl_status interp_run(const exp_run *run, exp_ctx *ctx, exp_sink *sink, rl_error *err)
{
    (void)ctx;
    rope_freqs f;
    interp_params p;
    rl_status st = interp_params_of(run, &p, err);
    if (st || (st = exp_rope_freqs(run, 0, &f, err)))
        return st;
    uint32_t L = run->model.train_len, m = L + 1, n = 2 * f.n_pairs;
    double *a = malloc((size_t)m * n * sizeof *a), *v = malloc((size_t)n * n * sizeof *v),
           *y = malloc(m * sizeof *y), *h = calloc(n, sizeof *h), *r = malloc(m * sizeof *r),
           *sig = malloc(n * sizeof *sig);
    if (!a || !v || !y || !h || !r || !sig) {
        st = rl_fail(err, RL_ERR_NOMEM, "interpolation: out of host memory");
        goto done;
    }
    rl_rng rng;
    rl_rng_seed(&rng, run->seed + p.draw * 0x9E3779B97F4A7C15ull,
                "interpolation/targets");
    for (uint32_t s = 0; s < m; s++)
        y[s] = 2.0 * rl_rng_uniform(&rng) - 1.0;
    for (uint32_t j = 0; j < f.n_pairs; j++)
        for (uint32_t s = 0; s < m; s++) {
            a[(size_t)(2 * j) * m + s] = cos((double)s * f.inv_freq[j]);
            a[(size_t)(2 * j + 1) * m + s] = -sin((double)s * f.inv_freq[j]);
        }
    int sweeps = jacobi_svd(a, m, n, v);
    double smax = 0;
    for (uint32_t k = 0; k < n; k++) {
        double nn = 0;
        for (uint32_t i = 0; i < m; i++)
            nn += a[(size_t)k * m + i] * a[(size_t)k * m + i];
        sig[k] = sqrt(nn);
        smax = fmax(smax, sig[k]);
    }
    double rcond = p.rcond_exp > 0 ? pow(10.0, -(double)p.rcond_exp) : (m > n ? m : n) * 0x1p-52;
    uint32_t rank = 0;
    for (uint32_t k = 0; k < n; k++) {
        if (!(sig[k] > rcond * smax))
            continue;
        rank++;
        double uy = 0; /* u_k^T y, u_k = a_k / sigma_k */
        for (uint32_t i = 0; i < m; i++)
            uy += a[(size_t)k * m + i] * y[i];
        uy /= sig[k] * sig[k];
        for (uint32_t i = 0; i < n; i++)
            h[i] += v[(size_t)k * n + i] * uy;
    }
    /* Residual and the normal equations A^T (y - A h), from a rebuilt A. */
    double fit_max = 0, rss = 0, ynorm = 0, h1 = 0, at_r = 0;
    for (uint32_t s = 0; s < m; s++) {
        double as = score(&f, h, s);
        r[s] = y[s] - as;
        fit_max = fmax(fit_max, fabs(as));
        rss += r[s] * r[s];
        ynorm += y[s] * y[s];
    }
    for (uint32_t i = 0; i < n; i++)
        h1 += fabs(h[i]);
    ynorm = sqrt(ynorm);
    for (uint32_t j = 0; j < f.n_pairs; j++) {
        double gc = 0, gs = 0;
        for (uint32_t s = 0; s < m; s++) {
            gc += cos((double)s * f.inv_freq[j]) * r[s];
            gs -= sin((double)s * f.inv_freq[j]) * r[s];
        }
        at_r = fmax(at_r, fmax(fabs(gc), fabs(gs)));
    }

    const char *c1[] = {"position_s_tokens", "fitted_score", "target"};
    double eval_max = p.eval_factor * L, extrap_max = 0, interp_max = 0;
    uint64_t step = p.step;
    if ((st = exp_sink_table(sink, "extrapolation", 3, c1, err)))
        goto done;
    for (uint64_t s = 0; (double)s <= eval_max && !st; s += step) {
        double as = score(&f, h, (double)s);
        if (s > L)
            extrap_max = fmax(extrap_max, fabs(as));
        double row[3] = {(double)s, as, s <= L ? y[s] : NAN};
        st = exp_sink_row(sink, row, err);
    }
    const char *c2[] = {"position_s_tokens", "fitted_score_at_half_integer"};
    if (!st)
        st = exp_sink_table(sink, "interpolation", 2, c2, err);
    for (uint32_t s = 0; s < L && !st; s++) {
        double as = score(&f, h, s + 0.5);
        interp_max = fmax(interp_max, fabs(as));
        if (s % step == 0) {
            double row[2] = {s + 0.5, as};
            st = exp_sink_row(sink, row, err);
        }
    }
    if (st)
        goto done;
    exp_sink_metric(sink, "fit_max_abs", fit_max);
    exp_sink_metric(sink, "fit_rms_residual", sqrt(rss / m));
    exp_sink_metric(sink, "interpolation_max_abs", interp_max);
    exp_sink_metric(sink, "extrapolation_max_abs", extrap_max);
    exp_sink_metric(sink, "extrapolation_over_interpolation", extrap_max / interp_max);
    exp_sink_metric(sink, "rank", rank);
    exp_sink_metric(sink, "condition_kept", smax / fmax(rcond * smax, 1e-300));
    exp_sink_metric(sink, "svd_sweeps", sweeps);
    /* Normal equations: for the truncated minimum-norm solution A^T r is
     * A^T y along the dropped singular directions, sum_dropped sigma_i v_i
     * (u_i^T y), at most rcond smax ||y|| sqrt(n) per entry; the Jacobi
     * stopping tolerance (columns orthogonal to 2^-50) leaves up to
     * 2^-50 n smax ||y||; rounding A h in double (n terms of size <= |h_j|)
     * moves each r_s by <= 2 n 2^-53 ||h||_1, and A^T sums m of them with
     * entries <= 1. */
    double bound = (rcond * sqrt((double)n) + 0x1p-50 * n) * smax * ynorm +
                   (double)m * 2.0 * n * 0x1p-53 * h1;
    int pass = sweeps <= 60 && at_r <= bound;
    exp_sink_verify(sink, "least squares: normal equations A^T (y - A h)", at_r, bound, pass,
                    "(rcond sqrt(n) + 2^-50 n) smax ||y|| + 2 m n 2^-53 ||h||_1");
    if (!pass)
        st = rl_fail(err, RL_ERR_MISMATCH,
                     "interpolation: the fit does not satisfy the normal equations (%.3g > %.3g, "
                     "%d Jacobi sweeps)", at_r, bound, sweeps);
done:
    free(a), free(v), free(y), free(h), free(r), free(sig);
    return st;
}

/* Every metric and table column this kind emits: title, unit, how it is drawn. */
static const exp_metric metrics[] = {
    {"extrapolation.position_s_tokens", "relative position s", "tokens", RL_PLOT_TRAIN},
    {"extrapolation.fitted_score", "fitted attention score a(s)", "", 0},
    {"extrapolation.target", "target score", "", 0},
    {"interpolation.position_s_tokens", "relative position s", "tokens", RL_PLOT_TRAIN},
    {"interpolation.fitted_score_at_half_integer", "fitted score at half-integer s", "", 0},
    {"fit_max_abs", "max |fit - target| on [0, L]", "", 0},
    {"fit_rms_residual", "RMS residual of the fit", "", 0},
    {"interpolation_max_abs", "max |a(s)| between integers", "", 0},
    {"extrapolation_max_abs", "max |a(s)| beyond L", "", 0},
    {"extrapolation_over_interpolation", "extrapolation / interpolation", "", 0},
    {"rank", "rank kept", "", 0},
    {"condition_kept", "condition number kept", "", 0},
    {"svd_sweeps", "SVD sweeps", "", 0},
};

const exp_kind exp_kind_interpolation = {
    .name = "interpolation",
    .about = "Chen et al. 2023 Fig. 2: least-squares fit of a(s) on [0, L], extrapolated vs "
             "interpolated",
    .params = params,
    .n_params = sizeof params / sizeof params[0],
    .uses_data = 0,
    .needs_gpu = 0,
    .check = interp_check,
    .estimate_bytes = interp_bytes,
    .run = interp_run,
    .metrics = metrics,
    .n_metrics = sizeof metrics / sizeof metrics[0],
};
