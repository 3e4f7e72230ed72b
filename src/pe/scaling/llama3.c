/* rope_type llama3: Llama 3.1's wavelength bands. */
#include "pe/rope_scaling.h"

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static rl_status resolve(rope_desc *r, rl_error *err)
{
    if (r->factor == 0)
        return rl_fail(err, RL_ERR_ARG, "llama3 needs factor (a number >= 1)");
    if (r->low_freq_factor == 0)
        return rl_fail(err, RL_ERR_ARG, "llama3 needs low_freq_factor (a number > 0)");
    if (r->high_freq_factor == 0)
        return rl_fail(err, RL_ERR_ARG, "llama3 needs high_freq_factor (a number >= low_freq_factor)");
    /* Equal factors (Llama 4: 1 and 1) leave no smoothed band; HF computes them. */
    if (r->high_freq_factor < r->low_freq_factor)
        return rl_fail(err, RL_ERR_ARG, "high_freq_factor %g must be at least low_freq_factor %g",
                       r->high_freq_factor, r->low_freq_factor);
    if (r->original_max_position_embeddings == 0)
        return rl_fail(err, RL_ERR_ARG, "llama3 needs original_max_position_embeddings");
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
    .example = example,
};
