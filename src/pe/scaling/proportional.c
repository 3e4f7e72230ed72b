/* rope_type proportional (Gemma 4): partial rotation by zero frequencies,
 * exponent over head_dim. */
#include <math.h>

#include "pe/rope_scaling.h"

static rl_status resolve(rope_desc *r, rl_error *err)
{
    if (r->partial_rotary_factor > 0 && r->rotary_dim != r->head_dim)
        return rl_fail_key(err, RL_ERR_ARG, "partial_rotary_factor",
                           "proportional takes partial_rotary_factor or rotary_dim, not both");
    return RL_OK;
}

static void freqs(const rope_desc *r, uint64_t n, uint32_t np, double *inv, double *theta,
                  double *af)
{
    (void)n, (void)af;
    const double factor = r->factor ? r->factor : 1.0;
    double base = r->theta;
    *theta = base;
    /* HF: rope_angles = int(prf * head_dim // 2); theta_j = base^(-2j/head_dim)/factor for
     * j < rope_angles, 0 (identity rotation) for the other head_dim/2 - rope_angles pairs. */
    uint32_t angles = r->partial_rotary_factor > 0
                          ? (uint32_t)floor(r->partial_rotary_factor * r->head_dim / 2.0)
                          : r->rotary_dim / 2;
    for (uint32_t j = 0; j < np; j++)
        inv[j] = j < angles ? pow(base, -(double)(2 * j) / r->head_dim) / factor : 0.0;
}

static void example(rope_desc *d) { d->partial_rotary_factor = 0.25; }

static const char *const keys[] = {"factor", NULL};
static const char *const required[] = {NULL};

const rope_scaling rope_scaling_proportional = {
    .name = "proportional",
    .summary = "theta_j = base^(-2j/head_dim)/factor for the first partial_rotary_factor * "
               "head_dim/2 pairs, 0 (identity) for the rest",
    .source = "transformers modeling_rope_utils.py _compute_proportional_rope_parameters "
              "(Gemma 4)",
    .keys = keys,
    .required = required,
    .whole_head = 1,
    .resolve = resolve,
    .freqs = freqs,
    .example = example,
};
