/* rope_type llama3: Llama 3.1's wavelength bands. */
#include "pe/rope_emu_ops.h"
#include "pe/rope_scaling.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static rl_status resolve(rope_desc *r, rl_error *err)
{
    if (r->factor == 0)
        return rl_fail_key(err, RL_ERR_ARG, "factor", "llama3 needs factor (a number >= 1)");
    if (r->low_freq_factor == 0)
        return rl_fail_key(err, RL_ERR_ARG, "low_freq_factor",
                           "llama3 needs low_freq_factor (a number > 0)");
    if (r->high_freq_factor == 0)
        return rl_fail_key(err, RL_ERR_ARG, "high_freq_factor",
                           "llama3 needs high_freq_factor (a number >= low_freq_factor)");
    /* Equal factors (Llama 4: 1 and 1) leave no smoothed band; HF computes them. */
    if (r->high_freq_factor < r->low_freq_factor)
        return rl_fail_key(err, RL_ERR_ARG, "high_freq_factor",
                           "high_freq_factor %g must be at least low_freq_factor %g",
                           r->high_freq_factor, r->low_freq_factor);
    if (r->original_max_position_embeddings == 0)
        return rl_fail_key(err, RL_ERR_ARG, "original_max_position_embeddings",
                           "llama3 needs original_max_position_embeddings");
    return RL_OK;
}

static void freqs(const rope_desc *r, uint64_t n, uint32_t np, double *inv, double *theta,
                  double *af)
{
    (void)n, (void)af;
    const double factor = r->factor ? r->factor : 1.0;
    *theta = r->theta;
    rope_scaling_base_freqs(r->theta, r->rotary_dim, np, inv);
    double Lo = r->original_max_position_embeddings;
    double low_wl = Lo / r->low_freq_factor, high_wl = Lo / r->high_freq_factor;
    for (uint32_t j = 0; j < np; j++) {
        double t = inv[j], wl = 2.0 * M_PI / t;
        if (wl > low_wl) {
            inv[j] = t / factor;
        } else if (!(wl < high_wl) && r->high_freq_factor > r->low_freq_factor) {
            double s = (Lo / wl - r->low_freq_factor) / (r->high_freq_factor - r->low_freq_factor);
            inv[j] = (1.0 - s) * t / factor + s * t;
        }
    }
}

static void example(rope_desc *d)
{
    d->theta = 500000;
    d->factor = 8;
    d->low_freq_factor = 1;
    d->high_freq_factor = 4;
    d->original_max_position_embeddings = 8192;
}

/* transformers _compute_llama3_parameters and vLLM
 * Llama3RotaryEmbedding._compute_inv_freq (the same values): the default
 * program, wavelen = 2 pi / inv (reciprocal times 2 pi), the bands' edges
 * L / low_freq_factor and L / high_freq_factor compared in float32, the
 * smooth factor (L / wavelen - low) / (high - low) and
 * fl(fl(fl(1 - sm) * inv) / factor) + fl(sm * inv) in the middle band. */
static int emu_freqs(const rope_desc *r, uint64_t n, int fw, uint32_t np, float *inv)
{
    (void)n, (void)fw;
    const double Lo = r->original_max_position_embeddings;
    const double lf = r->low_freq_factor, hf = r->high_freq_factor;
    const float low_wl = (float)(Lo / lf), high_wl = (float)(Lo / hf);
    const float f = (float)(r->factor ? r->factor : 1.0);
    rope_emu_default_inv(r->theta, r->rotary_dim, np, inv);
    for (uint32_t j = 0; j < np; j++) {
        float t = inv[j], wl = rope_emu_rdiv(2.0 * M_PI, t);
        float il = wl > low_wl ? t / f : t;
        if (!(wl < high_wl) && !(wl > low_wl) && hf != lf) {
            float sm = (rope_emu_rdiv(Lo, wl) - (float)lf) / (float)(hf - lf);
            il = (1.0f - sm) * il / f + sm * il;
        }
        inv[j] = il;
    }
    return 1;
}

static const char *const keys[] = {"factor", "original_max_position_embeddings",
                                   "low_freq_factor", "high_freq_factor", NULL};

const rope_scaling rope_scaling_llama3 = {
    .name = "llama3",
    .summary = "wavelength bands: long wavelengths theta_j/factor, short kept, smoothed between",
    .source = "Meta 2024, The Llama 3 Herd of Models, arXiv:2407.21783; transformers "
              "modeling_rope_utils.py _compute_llama3_parameters",
    .keys = keys,
    .required = keys,
    .resolve = resolve,
    .freqs = freqs,
    .emu_freqs = emu_freqs,
    .example = example,
};
