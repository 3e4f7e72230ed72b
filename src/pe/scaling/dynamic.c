/* rope_type dynamic: dynamic NTK (the base of the length in use). */
#include <math.h>

#include "pe/rope_emu_ops.h"
#include "pe/rope_scaling.h"

static rl_status resolve(rope_desc *r, rl_error *err)
{
    if (r->alpha > 0) { /* HunYuan: base * alpha^(d/(d-2)), no length */
        if (r->rotary_dim <= 2)
            return rl_fail_key(err, RL_ERR_ARG, "rotary_dim",
                               "dynamic needs rotary_dim > 2 (exponent d/(d-2))");
        return RL_OK;
    }
    if (r->factor == 0)
        return rl_fail_key(err, RL_ERR_ARG, "factor", "dynamic needs factor (a number >= 1)%s",
                           r->semantics == ROPE_SEM_VLLM ? " or, semantics vllm, alpha" : "");
    if (r->max_position_embeddings == 0)
        return rl_fail_key(err, RL_ERR_ARG, "max_position_embeddings",
                           "dynamic needs max_position_embeddings (HF scales relative to it)");
    if (r->rotary_dim <= 2)
        return rl_fail_key(err, RL_ERR_ARG, "rotary_dim",
                           "dynamic needs rotary_dim > 2 (exponent d/(d-2))");
    return RL_OK;
}

static void freqs(const rope_desc *r, uint64_t n, uint32_t np, double *inv, double *theta,
                  double *af)
{
    (void)af;
    const double dim = r->rotary_dim, factor = r->factor ? r->factor : 1.0;
    const int vllm = r->semantics == ROPE_SEM_VLLM;
    double base;
    if (vllm && r->alpha > 0) { /* vLLM DynamicNTKAlphaRotaryEmbedding (HunYuan) */
        base = r->theta * pow(r->alpha, dim / (dim - 2.0));
    } else if (vllm) {
        /* vLLM DynamicNTKScalingRotaryEmbedding: computed once with
         * max_len = M * factor, i.e. HF's formula at L = M * factor for
         * every length (#3488): base * (factor^2 - factor + 1)^(d/(d-2)). */
        double M = r->max_position_embeddings, L = M * factor;
        base = r->theta * pow(factor * L / M - (factor - 1.0), dim / (dim - 2.0));
    } else {
        /* HF: seq_len = max(seq_len, M); base * ((factor*L/M) - (factor-1))^(d/(d-2)). */
        double M = r->max_position_embeddings;
        double L = (double)n > M ? (double)n : M;
        base = r->theta * pow(factor * L / M - (factor - 1.0), dim / (dim - 2.0));
    }
    *theta = base;
    rope_scaling_base_freqs(base, dim, np, inv);
}

/* alpha: vLLM's */
/* The frameworks' dynamic programs. transformers
 * _compute_dynamic_ntk_parameters: at init (seq_len None: M, a Python int)
 * the base is Python double arithmetic, rounded to float32 in the power;
 * in the forward pass beyond M (dynamic_rope_update, seq_len =
 * max(position_ids) + 1, an int64 tensor) every step is a float32 tensor
 * operation: x = fl(fl(fl(factor * N) / M) - (factor - 1)), x ** (d/(d-2))
 * in double (a 0-dim tensor's power, rounded once), then fl(base * it). vLLM (semantics vllm) computes its one base in Python
 * double (DynamicNTKScalingRotaryEmbedding at max_len = M * factor;
 * DynamicNTKAlphaRotaryEmbedding from alpha), then _compute_inv_freq. */
static int emu_freqs(const rope_desc *r, uint64_t n, int fw, uint32_t np, float *inv)
{
    (void)fw;
    const uint32_t dim = r->rotary_dim;
    const double factor = r->factor ? r->factor : 1.0, M = r->max_position_embeddings;
    const double e = (double)dim / (double)(dim - 2);
    if (r->semantics == ROPE_SEM_VLLM) {
        double base = r->alpha > 0 ? r->theta * pow(r->alpha, e)
                                   : r->theta * pow(factor * (M * factor) / M - (factor - 1.0), e);
        rope_emu_default_inv(base, dim, np, inv);
        return 1;
    }
    if ((double)n <= M) { /* init: seq_len = M as a Python int */
        rope_emu_default_inv(r->theta * pow(factor * M / M - (factor - 1.0), e), dim, np, inv);
        return 1;
    }
    float x = (float)factor * (float)n;
    x = x / (float)M;
    x = x - (float)(factor - 1.0);
    /* a 0-dim tensor to a Python number's power: torch's scalar loop,
     * std::pow(float, double), in double (t * t for 2) */
    x = e == 2.0 ? x * x : (float)pow((double)x, e);
    const float b = (float)r->theta * x;
    for (uint32_t j = 0; j < np; j++)
        inv[j] = rope_emu_rdiv(1.0, powf(b, (float)(2 * j) / (float)dim));
    return 1;
}

static const char *const keys[] = {"factor", "original_max_position_embeddings", "alpha", NULL};
static const char *const required[] = {"factor", "max_position_embeddings", NULL};

const rope_scaling rope_scaling_dynamic = {
    .name = "dynamic",
    .summary = "dynamic NTK: the NTK base of the length in use, max(seq_len, M)",
    .source = "emozilla 2023, Dynamically Scaled RoPE (reddit r/LocalLLaMA); transformers "
              "modeling_rope_utils.py _compute_dynamic_ntk_parameters; vLLM "
              "DynamicNTKScalingRotaryEmbedding / DynamicNTKAlphaRotaryEmbedding (semantics vllm)",
    .keys = keys,
    .required = required,
    .length_dependent = 1,
    .resolve = resolve,
    .freqs = freqs,
    .emu_freqs = emu_freqs,
};
