/* RoPE parameters -> frequencies. The one formula shared by the CPU
 * reference and the GPU host side. */
#include <math.h>
#include <string.h>

#include "pe/rope.h"

rl_status rope_desc_resolve(const rope_desc *d, rope_desc *out, rl_error *err)
{
    rope_desc r = *d;
    if (r.head_dim == 0)
        return rl_fail(err, RL_ERR_ARG, "head_dim is required (got 0)");
    if (r.head_dim > ROPE_MAX_HEAD_DIM)
        return rl_fail(err, RL_ERR_ARG, "head_dim %u exceeds the supported maximum %u", r.head_dim,
                       ROPE_MAX_HEAD_DIM);
    if (r.rotary_dim == 0)
        r.rotary_dim = r.head_dim;
    if (r.rotary_dim % 2 != 0)
        return rl_fail(err, RL_ERR_ARG, "rotary_dim %u must be even (it rotates pairs)", r.rotary_dim);
    if (r.rotary_dim > r.head_dim)
        return rl_fail(err, RL_ERR_ARG, "rotary_dim %u exceeds head_dim %u", r.rotary_dim, r.head_dim);
    if (r.theta == 0)
        r.theta = ROPE_DEFAULT_THETA;
    if (!(r.theta > 1.0) || !isfinite(r.theta))
        return rl_fail(err, RL_ERR_ARG, "rope_theta %g must be a finite number > 1", r.theta);
    if (r.layout != RL_ROPE_LAYOUT_HALF && r.layout != RL_ROPE_LAYOUT_INTERLEAVED)
        return rl_fail(err, RL_ERR_ARG, "layout %d must be half (%d) or interleaved (%d)", r.layout,
                       RL_ROPE_LAYOUT_HALF, RL_ROPE_LAYOUT_INTERLEAVED);
    *out = r;
    return RL_OK;
}

rl_status rope_freqs_compute(const rope_desc *d, rope_freqs *f, rl_error *err)
{
    rope_desc r;
    rl_status st = rope_desc_resolve(d, &r, err);
    if (st)
        return st;
    memset(f, 0, sizeof *f);
    f->head_dim = r.head_dim;
    f->rotary_dim = r.rotary_dim;
    f->n_pairs = r.rotary_dim / 2;
    f->layout = r.layout;
    f->theta = r.theta;
    f->attention_factor = 1.0;
    for (uint32_t j = 0; j < f->n_pairs; j++)
        f->inv_freq[j] = pow(r.theta, -(double)(2 * j) / (double)r.rotary_dim);
    return RL_OK;
}
