/* rope_type default: the unscaled rotation. */
#include "pe/rope_scaling.h"

static void freqs(const rope_desc *r, uint64_t n, uint32_t np, double *inv, double *theta,
                  double *af)
{
    (void)n, (void)af;
    *theta = r->theta;
    rope_scaling_base_freqs(r->theta, r->rotary_dim, np, inv);
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
};
