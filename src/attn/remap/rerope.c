/* attn_remap rerope: ReRoPE's clamped distance.
 *
 * Su 2023, "Rectified Rotary Position Embeddings" (kexue.fm/archives/9708);
 * bojone/rerope rerope_patch: |i - j| < w normal, else q rotated at w, k
 * unrotated (position 0): distance w. */
#include <math.h>

#include "attn/attn_remap.h"

static void positions(const attn_remap *r, uint64_t p, uint64_t *q, uint64_t *k)
{
    (void)p;
    *q = r->window;
    *k = 0;
}

static double distance(const attn_remap *r, int64_t pos_i, int64_t pos_j)
{
    double d = (double)(pos_i - pos_j), W = r->window;
    return fabs(d) < W ? d : W;
}

static const char *const keys[] = {"attn_remap_window", NULL};

const attn_remap_method attn_remap_rerope = {
    .name = "rerope",
    .summary = "ReRoPE: exact within w, distance w beyond (q at w, k at 0)",
    .source = "Su 2023, ReRoPE; bojone/rerope rerope_patch",
    .defs = ATTN_REMAP_DEFS_WINDOW,
    .keys = keys,
    .positions = positions,
    .distance = distance,
};
