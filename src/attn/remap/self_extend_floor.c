/* attn_remap self_extend_floor: Self-Extend with the integer offset.
 *
 * The grouped positions of self_extend (self_extend.c) with the query's
 * offset W - floor(W/G) in integers, so any window and group are accepted:
 * where G divides W it is self_extend itself; otherwise it is ropelab's
 * integer reading, not the authors' prefill code (datamllab/LongLM
 * self_extend_patch: W - W/G in floating point; issue 27 measured the two
 * up to 0.012 nats apart in entropy when G does not divide W). */
#include "attn/attn_remap.h"

static rl_status check(const attn_remap *r, rl_error *err)
{
    if (r->group < 1)
        return rl_fail_key(err, RL_ERR_ARG, "attn_remap_group",
                       "attn_remap_group %u: self_extend_floor needs a group size >= 1", r->group);
    return RL_OK;
}

static const char *const keys[] = {"attn_remap_window", "attn_remap_group", NULL};

const attn_remap_method attn_remap_self_extend_floor = {
    .name = "self_extend_floor",
    .summary = "Self-Extend with the integer offset: q at floor(i/G) + W - floor(W/G) for any W, G "
               "(ropelab's reading where G does not divide W)",
    .source = "Jin et al. 2024, LLM Maybe LongLM, arXiv:2401.01325; datamllab/LongLM "
              "self_extend_patch, its offset W - W/G taken in integers",
    .defs = ATTN_REMAP_DEFS_WINDOW,
    .keys = keys,
    .check = check,
    .positions = attn_remap_self_extend_positions, /* self_extend.c's map */
    .distance = attn_remap_self_extend_distance,
};
