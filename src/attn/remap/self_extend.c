/* attn_remap self_extend: Self-Extend's grouped positions.
 *
 * Jin et al. 2024, "LLM Maybe LongLM: Self-Extend LLM Context Window
 * Without Tuning", arXiv:2401.01325; datamllab/LongLM self_extend_patch
 * (group_size_1 = G, group_size_2 = W): for i - j < W the normal logit;
 * beyond, q at i // G + W - W / G and k at j // G, so the distance is
 * floor(i/G) - floor(j/G) + W - W/G. The offset is the authors' prefill
 * code's, `_re_group_size_2 - _re_group_size_2 / group_size_1`: a true
 * division, so when G does not divide W the grouped query sits at a
 * fractional position, which ropelab's integer positions cannot hold: such
 * a window is refused, naming self_extend_floor (W - floor(W/G), the
 * integer reading) as the alternative. llama.cpp's grp-attn-n / grp-attn-w
 * (KV-cache position division during generation) approximates the same map
 * and is not followed. */
#include <math.h>

#include "attn/attn_remap.h"

static rl_status check(const attn_remap *r, rl_error *err)
{
    if (r->group < 1)
        return rl_fail_key(err, RL_ERR_ARG, "attn_remap_group",
                           "attn_remap_group %u: self_extend needs a group size >= 1",
                           r->group);
    if (r->window % r->group)
        return rl_fail_key(err, RL_ERR_ARG, "attn_remap_window",
                       "attn_remap_window %u is not a multiple of attn_remap_group %u: LongLM's "
                       "prefill (self_extend_patch) puts the grouped query at i // G + W - W / G, "
                       "a true division, here %.6g: a fractional position ropelab's integer "
                       "positions cannot hold; give a window that G divides, or attn_remap: "
                       "self_extend_floor (W - floor(W/G) = %u)",
                       r->window, r->group, (double)r->window - (double)r->window / r->group,
                       r->window - r->window / r->group);
    return RL_OK;
}

void attn_remap_self_extend_positions(const attn_remap *r, uint64_t p, uint64_t *q, uint64_t *k)
{
    uint64_t W = r->window, G = r->group ? r->group : 1;
    *q = p / G + W - W / G;
    *k = p / G;
}

double attn_remap_self_extend_distance(const attn_remap *r, int64_t pos_i, int64_t pos_j)
{
    double d = (double)(pos_i - pos_j), W = r->window, G = r->group;
    if (fabs(d) < W)
        return d;
    return floor((double)pos_i / G) - floor((double)pos_j / G) + W - floor(W / G);
}

static const char *const keys[] = {"attn_remap_window", "attn_remap_group", NULL};

const attn_remap_method attn_remap_self_extend = {
    .name = "self_extend",
    .summary = "Self-Extend: exact within W, beyond q at floor(i/G) + W - W/G, k at floor(j/G) "
               "(G must divide W: the authors' offset is a true division)",
    .source = "Jin et al. 2024, LLM Maybe LongLM, arXiv:2401.01325; datamllab/LongLM "
              "self_extend_patch",
    .defs = ATTN_REMAP_DEFS_WINDOW,
    .keys = keys,
    .check = check,
    .positions = attn_remap_self_extend_positions,
    .distance = attn_remap_self_extend_distance,
};
