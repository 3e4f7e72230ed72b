/* rope_type longrope: per-pair rescale factors (Phi-3 short/long). */
#include <math.h>

#include "pe/rope_emu_ops.h"
#include "pe/rope_scaling.h"

static rl_status resolve(rope_desc *r, rl_error *err)
{
    uint32_t M = r->max_position_embeddings;
    if (r->original_max_position_embeddings == 0)
        r->original_max_position_embeddings = M;
    uint32_t L = r->original_max_position_embeddings;
    if (L == 0)
        return rl_fail_key(err, RL_ERR_ARG, "original_max_position_embeddings",
                           "longrope needs original_max_position_embeddings (or "
                           "max_position_embeddings)");
    if (r->factor == 0) {
        if (M == 0)
            return rl_fail_key(err, RL_ERR_ARG, "factor",
                               "longrope needs factor "
                               "(or max_position_embeddings to derive it from)");
        r->factor = (double)M / (double)L;
    }
    if (r->n_short_factor == 0)
        return rl_fail_key(err, RL_ERR_ARG, "short_factor",
                           "longrope needs short_factor (a list of %u numbers)",
                           r->rotary_dim / 2);
    if (r->n_long_factor == 0)
        return rl_fail_key(err, RL_ERR_ARG, "long_factor",
                           "longrope needs long_factor (a list of %u numbers)",
                           r->rotary_dim / 2);
    if (r->n_short_factor != r->rotary_dim / 2)
        return rl_fail_key(err, RL_ERR_ARG, "short_factor",
                           "short_factor has %u entries; expected rotary_dim/2 = %u",
                           r->n_short_factor, r->rotary_dim / 2);
    if (r->n_long_factor != r->rotary_dim / 2)
        return rl_fail_key(err, RL_ERR_ARG, "long_factor",
                           "long_factor has %u entries; expected rotary_dim/2 = %u",
                           r->n_long_factor, r->rotary_dim / 2);
    for (uint32_t j = 0; j < r->rotary_dim / 2; j++) {
        if (!isfinite(r->short_factor[j]) || !(r->short_factor[j] > 0))
            return rl_fail_key(err, RL_ERR_ARG, "short_factor",
                               "short_factor[%u] = %g must be a finite number > 0", j,
                               r->short_factor[j]);
        if (!isfinite(r->long_factor[j]) || !(r->long_factor[j] > 0))
            return rl_fail_key(err, RL_ERR_ARG, "long_factor",
                               "long_factor[%u] = %g must be a finite number > 0", j,
                               r->long_factor[j]);
    }
    return RL_OK;
}

static void freqs(const rope_desc *r, uint64_t n, uint32_t np, double *inv, double *theta,
                  double *af)
{
    const double factor = r->factor ? r->factor : 1.0;
    *theta = r->theta;
    rope_scaling_base_freqs(r->theta, r->rotary_dim, np, inv);
    double Lo = r->original_max_position_embeddings;
    if (r->attention_factor > 0)
        *af = r->attention_factor;
    else
        *af = factor <= 1 ? 1.0 : sqrt(1.0 + log(factor) / log(Lo));
    int use_long = n > r->original_max_position_embeddings;
    for (uint32_t j = 0; j < np; j++)
        inv[j] /= use_long ? r->long_factor[j] : r->short_factor[j];
}

static void example(rope_desc *d)
{
    d->n_short_factor = d->n_long_factor = 32; /* rotary_dim 64 in the check cases */
    for (uint32_t j = 0; j < 32; j++) {
        d->short_factor[j] = 1.0 + 0.01 * j;
        d->long_factor[j] = 1.0 + 0.5 * j;
    }
}

/* transformers _compute_longrope_parameters and vLLM
 * Phi3LongRoPEScaledRotaryEmbedding._compute_inv_freq: the factors as a
 * float32 tensor, 1.0 / (ext * base ** (arange(0, d, 2) / d)); long beyond
 * original_max_position_embeddings, as the double program. */
static int emu_freqs(const rope_desc *r, uint64_t n, int fw, uint32_t np, float *inv)
{
    (void)fw;
    int use_long = n > r->original_max_position_embeddings;
    for (uint32_t j = 0; j < np; j++) {
        float ext = (float)(use_long ? r->long_factor[j] : r->short_factor[j]);
        inv[j] = rope_emu_rdiv(1.0, ext * rope_emu_pos_freq(r->theta, j, r->rotary_dim));
    }
    return 1;
}

static const char *const keys[] = {"factor", "original_max_position_embeddings",
                                   "attention_factor", "short_factor", "long_factor", NULL};
static const char *const required[] = {"original_max_position_embeddings", "short_factor",
                                       "long_factor", NULL};

const rope_scaling rope_scaling_longrope = {
    .name = "longrope",
    .summary = "theta_j / short_factor[j] up to L_orig, / long_factor[j] beyond; attention "
               "factor sqrt(1 + ln(factor)/ln(L_orig))",
    .source = "Ding et al. 2024, LongRoPE, arXiv:2402.13753 (Phi-3); transformers "
              "modeling_rope_utils.py _compute_longrope_parameters",
    .keys = keys,
    .required = required,
    .resolve = resolve,
    .freqs = freqs,
    .emu_freqs = emu_freqs,
    .example = example,
};
