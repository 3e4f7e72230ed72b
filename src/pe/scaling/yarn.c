/* rope_type yarn: NTK-by-parts interpolation plus the attention factor. */
#include <math.h>

#include "pe/rope_emu_ops.h"
#include "pe/scaling/yarn.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

/* HF yarn: get_mscale(scale, mscale) = 0.1 * mscale * ln(scale) + 1 (1 when scale <= 1). */
static double yarn_get_mscale(double scale, double mscale)
{
    return scale <= 1 ? 1.0 : 0.1 * mscale * log(scale) + 1.0;
}

/* HF yarn: find_correction_dim = dim * ln(L / (n_rot * 2 pi)) / (2 ln base). */
static double yarn_correction_dim(double n_rot, double dim, double base, double len)
{
    return dim * log(len / (n_rot * 2.0 * M_PI)) / (2.0 * log(base));
}

void rope_yarn_blend(const rope_desc *r, double base, double s, uint32_t np, double *inv,
                     double *af)
{
    const double dim = r->rotary_dim;
    if (r->attention_factor > 0)
        *af = r->attention_factor;
    else if (r->mscale > 0 && r->mscale_all_dim > 0) /* HF: `if mscale and mscale_all_dim` */
        *af = yarn_get_mscale(s, r->mscale) / yarn_get_mscale(s, r->mscale_all_dim);
    else
        *af = yarn_get_mscale(s, 1.0);
    double bf = r->beta_fast ? r->beta_fast : 32, bs = r->beta_slow ? r->beta_slow : 1;
    double L = r->original_max_position_embeddings;
    double lo = yarn_correction_dim(bf, dim, base, L), hi = yarn_correction_dim(bs, dim, base, L);
    if (r->truncate >= 0) { /* HF default truncate=True */
        lo = floor(lo);
        hi = ceil(hi);
    }
    if (lo < 0)
        lo = 0;
    if (hi > dim - 1)
        hi = dim - 1;
    if (lo == hi)
        hi += 0.001; /* HF: prevent singularity */
    for (uint32_t j = 0; j < np; j++) {
        double ramp = ((double)j - lo) / (hi - lo);
        ramp = ramp < 0 ? 0 : ramp > 1 ? 1 : ramp;
        /* extrapolation weight (1 - ramp) keeps theta_j, ramp interpolates theta_j/s */
        double t = inv[j];
        inv[j] = (t / s) * ramp + t * (1.0 - ramp);
    }
}

rl_status rope_yarn_check_betas(const rope_desc *r, rl_error *err)
{
    if ((r->beta_fast ? r->beta_fast : 32) < (r->beta_slow ? r->beta_slow : 1))
        return rl_fail_key(err, RL_ERR_ARG, "beta_fast", "beta_fast %g must be >= beta_slow %g",
                           r->beta_fast ? r->beta_fast : 32, r->beta_slow ? r->beta_slow : 1);
    return RL_OK;
}

static rl_status resolve(rope_desc *r, rl_error *err)
{
    uint32_t M = r->max_position_embeddings;
    if (r->original_max_position_embeddings == 0)
        r->original_max_position_embeddings = M; /* HF standardize_rope_params */
    uint32_t L = r->original_max_position_embeddings;
    if (L == 0)
        return rl_fail_key(err, RL_ERR_ARG, "original_max_position_embeddings",
                           "yarn needs original_max_position_embeddings (or "
                           "max_position_embeddings)");
    if (r->factor == 0) {
        if (M == 0)
            return rl_fail_key(err, RL_ERR_ARG, "factor",
                               "yarn needs factor (or max_position_embeddings to derive it from)");
        r->factor = (double)M / (double)L; /* HF: factor None -> M / L_orig */
        if (r->factor < 1)
            return rl_fail_key(err, RL_ERR_ARG, "max_position_embeddings",
                               "factor derived as "
                               "max_position_embeddings/original_max_position_embeddings"
                               " = %g must be >= 1", r->factor);
    }
    return rope_yarn_check_betas(r, err);
}

static void freqs(const rope_desc *r, uint64_t n, uint32_t np, double *inv, double *theta,
                  double *af)
{
    (void)n;
    *theta = r->theta;
    rope_scaling_base_freqs(r->theta, r->rotary_dim, np, inv);
    rope_yarn_blend(r, r->theta, r->factor ? r->factor : 1.0, np, inv, af);
}

static void example(rope_desc *d)
{
    d->mscale = 1;
    d->mscale_all_dim = 0.707;
}

/* transformers _compute_yarn_parameters and vLLM
 * YaRNScalingRotaryEmbedding._compute_inv_freq (the same operations): the
 * correction range in Python double (floor/ceil with truncate, clamped to
 * [0, d-1], +0.001 when empty), the ramp (arange - low) / (high - low)
 * clamped to [0, 1] and mask 1 - ramp in float32, then
 * fl(fl(interp * fl(1 - mask)) + fl(extrap * mask)) with extrap = 1 / p
 * and interp = 1 / (factor * p), p = base ** (arange(0, d, 2) / d). */
static int emu_freqs(const rope_desc *r, uint64_t n, int fw, uint32_t np, float *inv)
{
    (void)n, (void)fw;
    const uint32_t dim = r->rotary_dim;
    const double s = r->factor ? r->factor : 1.0;
    double bf = r->beta_fast ? r->beta_fast : 32, bs = r->beta_slow ? r->beta_slow : 1;
    double L = r->original_max_position_embeddings;
    double lo = yarn_correction_dim(bf, dim, r->theta, L), hi = yarn_correction_dim(bs, dim, r->theta, L);
    if (r->truncate >= 0) {
        lo = floor(lo);
        hi = ceil(hi);
    }
    lo = lo < 0 ? 0 : lo;
    hi = hi > dim - 1 ? dim - 1 : hi;
    if (lo == hi)
        hi += 0.001;
    const float flo = (float)lo, span = (float)(hi - lo), fs = (float)s;
    for (uint32_t j = 0; j < np; j++) {
        float p = rope_emu_pos_freq(r->theta, j, dim);
        float extrap = rope_emu_rdiv(1.0, p), interp = rope_emu_rdiv(1.0, fs * p);
        float ramp = ((float)j - flo) / span;
        ramp = ramp < 0.0f ? 0.0f : ramp > 1.0f ? 1.0f : ramp;
        float mask = 1.0f - ramp;
        inv[j] = interp * (1.0f - mask) + extrap * mask;
    }
    return 1;
}

static const char *const keys[] = {"factor", "original_max_position_embeddings", "beta_fast",
                                   "beta_slow", "mscale", "mscale_all_dim", "truncate",
                                   "attention_factor", NULL};
static const char *const required[] = {"original_max_position_embeddings", NULL};

const rope_scaling rope_scaling_yarn = {
    .name = "yarn",
    .summary = "NTK-by-parts: theta_j blended with theta_j/factor by a ramp over the correction "
               "range, attention factor 0.1 ln(factor) + 1",
    .source = "Peng et al. 2023, YaRN, arXiv:2309.00071; transformers modeling_rope_utils.py "
              "_compute_yarn_parameters",
    .keys = keys,
    .required = required,
    .resolve = resolve,
    .freqs = freqs,
    .emu_freqs = emu_freqs,
    .example = example,
};
