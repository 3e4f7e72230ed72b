/* attn_remap leaky_rerope: Leaky ReRoPE.
 *
 * Su 2023 (kexue.fm/archives/9708); bojone/rerope leaky_rerope_patch:
 * beyond w the distance is w + (i - j - w)/k: q at i + w(k - 1) and k at j,
 * both rotated by the linear-scaled (factor k) twin of the encoding, i.e.
 * angles (i + w(k - 1))/k and j/k, as the patch's
 * LlamaLinearScalingRotaryEmbedding with integer scaling_factor k. */
#include <math.h>

#include "attn/attn_remap.h"

static rl_status check(const attn_remap *r, rl_error *err)
{
    if (r->leak < 1)
        return rl_fail_key(err, RL_ERR_ARG, "attn_remap_leak",
                           "attn_remap_leak %u: leaky_rerope needs k >= 1", r->leak);
    return RL_OK;
}

static void positions(const attn_remap *r, uint64_t p, uint64_t *q, uint64_t *k)
{
    uint64_t W = r->window, K = r->leak ? r->leak : 1;
    *q = p + W * (K - 1);
    *k = p;
}

static double distance(const attn_remap *r, int64_t pos_i, int64_t pos_j)
{
    double d = (double)(pos_i - pos_j), W = r->window;
    return fabs(d) < W ? d : W + (d - W) / r->leak;
}

static const char *const keys[] = {"attn_remap_window", "attn_remap_leak", NULL};

const attn_remap_method attn_remap_leaky_rerope = {
    .name = "leaky_rerope",
    .summary = "Leaky ReRoPE: exact within w, distance w + (d - w)/k beyond",
    .source = "Su 2023, ReRoPE; bojone/rerope leaky_rerope_patch",
    .defs = ATTN_REMAP_DEFS_WINDOW,
    .keys = keys,
    .check = check,
    .positions = positions,
    .distance = distance,
    .linear_twin = 1,
};
