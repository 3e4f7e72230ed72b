/* rope_type ntk: fixed NTK-aware base change (semantics vllm: vLLM's
 * NTKScalingRotaryEmbedding, with mixed_b the mixed-NTK divisors). */
#include <math.h>

#include "pe/rope_scaling.h"

static rl_status resolve(rope_desc *r, rl_error *err)
{
    if (r->factor == 0)
        return rl_fail_key(err, RL_ERR_ARG, "factor", "%s needs factor (a number >= 1)", "ntk");
    return RL_OK;
}

static void freqs(const rope_desc *r, uint64_t n, uint32_t np, double *inv, double *theta,
                  double *af)
{
    (void)n, (void)af;
    const double dim = r->rotary_dim, factor = r->factor ? r->factor : 1.0;
    const int vllm = r->semantics == ROPE_SEM_VLLM;
    /* vLLM NTKScalingRotaryEmbedding: base * factor (mixed_b: base). */
    double base = vllm ? (r->mixed_b > 0 ? r->theta : r->theta * factor)
                       : r->theta * pow(factor, dim / (dim - 2.0));
    *theta = base;
    rope_scaling_base_freqs(base, dim, np, inv);
    if (!vllm)
        return;
    if (r->mixed_b > 0) {
        /* mixed NTK (kexue.fm/archives/9706): lambda_m = exp(a m^b),
         * a = ln(factor) / (d/2)^b, m = j + 1. */
        double a = log(factor) / pow(dim / 2.0, r->mixed_b);
        for (uint32_t j = 0; j < np; j++)
            inv[j] /= exp(a * pow((double)(j + 1), r->mixed_b));
    } else {
        for (uint32_t j = 0; j < np; j++)
            inv[j] /= pow(factor, 2.0 / dim);
    }
}

static const char *const keys[] = {"factor", "mixed_b", NULL}; /* mixed_b: vLLM's */
static const char *const required[] = {"factor", NULL};

const rope_scaling rope_scaling_ntk = {
    .name = "ntk",
    .summary = "fixed NTK-aware base change: base * factor^(d/(d-2))",
    .source = "bloc97 2023, NTK-Aware Scaled RoPE (reddit r/LocalLLaMA); vLLM "
              "rotary_embedding NTKScalingRotaryEmbedding (semantics vllm)",
    .keys = keys,
    .required = required,
    .resolve = resolve,
    .freqs = freqs,
};
