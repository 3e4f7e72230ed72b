/* rope_type linear: position interpolation. */
#include "pe/rope_emu_ops.h"
#include "pe/rope_scaling.h"

static rl_status resolve(rope_desc *r, rl_error *err)
{
    if (r->factor == 0)
        return rl_fail_key(err, RL_ERR_ARG, "factor", "%s needs factor (a number >= 1)", "linear");
    return RL_OK;
}

static void freqs(const rope_desc *r, uint64_t n, uint32_t np, double *inv, double *theta,
                  double *af)
{
    (void)n, (void)af;
    const double factor = r->factor ? r->factor : 1.0;
    *theta = r->theta;
    rope_scaling_base_freqs(r->theta, r->rotary_dim, np, inv);
    for (uint32_t j = 0; j < np; j++)
        inv[j] /= factor;
}

/* transformers _compute_linear_scaling_rope_parameters: the default
 * program, then `inv_freq /= factor`. vLLM's LinearScalingRotaryEmbedding
 * divides the positions instead (t / factor before the product): not an
 * inv_freq program, so none here. */
static int emu_freqs(const rope_desc *r, uint64_t n, int fw, uint32_t np, float *inv)
{
    (void)n;
    if (fw != RL_ROPE_PREC_HF)
        return 0;
    rope_emu_default_inv(r->theta, r->rotary_dim, np, inv);
    const float s = (float)(r->factor ? r->factor : 1.0);
    for (uint32_t j = 0; j < np; j++)
        inv[j] = inv[j] / s;
    return 1;
}

static const char *const keys[] = {"factor", NULL};

const rope_scaling rope_scaling_linear = {
    .name = "linear",
    .summary = "position interpolation: theta_j / factor",
    .source = "Chen et al. 2023, Extending Context Window of LLMs via Positional Interpolation, "
              "arXiv:2306.15595; transformers modeling_rope_utils.py "
              "_compute_linear_scaling_rope_parameters",
    .keys = keys,
    .required = keys,
    .resolve = resolve,
    .freqs = freqs,
    .emu_freqs = emu_freqs,
};
