/* rope_type default: the unscaled rotation. */
#include "pe/rope_emu_ops.h"
#include "pe/rope_scaling.h"

static void freqs(const rope_desc *r, uint64_t n, uint32_t np, double *inv, double *theta,
                  double *af)
{
    (void)n, (void)af;
    *theta = r->theta;
    rope_scaling_base_freqs(r->theta, r->rotary_dim, np, inv);
}

/* transformers _compute_default_rope_parameters and vLLM
 * RotaryEmbedding._compute_inv_freq: the same operations. */
static int emu_freqs(const rope_desc *r, uint64_t n, int fw, uint32_t np, float *inv)
{
    (void)n, (void)fw;
    rope_emu_default_inv(r->theta, r->rotary_dim, np, inv);
    return 1;
}

static const char *const keys[] = {NULL};

const rope_scaling rope_scaling_default = {
    .name = "default",
    .summary = "theta_j = base^(-2j/d), no scaling",
    .source = "Su et al. 2021, RoFormer, arXiv:2104.09864; transformers modeling_rope_utils.py "
              "_compute_default_rope_parameters",
    .keys = keys,
    .required = keys,
    .freqs = freqs,
    .emu_freqs = emu_freqs,
};
