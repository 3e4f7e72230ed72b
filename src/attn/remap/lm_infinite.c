/* attn_remap lm_infinite: LM-Infinite's Lambda-shaped mask + distance cap.
 *
 * Han et al. 2023, "LM-Infinite: Zero-Shot Extreme Length Generalization
 * for Large Language Models", arXiv:2308.16137: every query attends to the
 * first n_global tokens (global branch) and to the keys at distance below
 * L (local branch); every distance beyond L reads as L. The authors' code,
 * Glaciohound/LM-Infinite, which this file follows:
 *   models/llama.py attn_forward_factory / limited_distance_forward (as
 *   convert_llama_model sets it: use_lambda_mask, limit_distance =
 *   local_branch = L): stationary_key_states = the unrotated keys (position
 *   0), stationary_query_states = the query rotated at
 *   effective_limit_distance = min(limit_distance, kv_seq_len - 1);
 *   models/lambda_attention.py Lambda_Attention_Matrix: the global columns
 *   (keys j < global_branch) take the stationary logit where i - j >= L
 *   (triu(-local_branch + 1) masked), the local band the rotated logit where
 *   0 <= i - j < L (tril(local_branch).triu(1) of the paired blocks);
 *   everything else is masked.
 * That is exactly ropelab's mask {causal, n_sink = global_branch, window =
 * L} (j < n_sink or i - j < window) with ReRoPE's remapped definition at
 * remap_window = L (q at L, k at 0: distance L wherever i - j >= L, and
 * min(L, kv_seq_len - 1) = L wherever such a pair exists): this entry only
 * configures that machinery. n_global is attn_sinks (the code's
 * global_branch, default 100 in its utils/arguments.py; the paper's
 * default is not what the code runs), L is attn_remap_window (the code's
 * local_branch, default 2048 there). The code's other options are not
 * modelled: limit_distance != local_branch (only in its costlier
 * non-lambda path, which then keeps every key) and triangle_offset. */
#include <math.h>

#include "attn/attn_remap.h"

static void positions(const attn_remap *r, uint64_t p, uint64_t *q, uint64_t *k)
{
    (void)p;
    *q = r->window; /* stationary_query_states: rotated at the limit distance */
    *k = 0;         /* stationary_key_states: unrotated */
}

static double distance(const attn_remap *r, int64_t pos_i, int64_t pos_j)
{
    double d = (double)(pos_i - pos_j), L = r->window;
    return fabs(d) < L ? d : L;
}

static rl_status mask(const attn_remap *r, attn_remap_mask *m, rl_error *err)
{
    if (m->chunk_size)
        return rl_fail_key(err, RL_ERR_ARG, "attn_chunk",
                           "attn_chunk %u: lm_infinite's Lambda mask has no chunks",
                           m->chunk_size);
    if (m->window && m->window != r->window)
        return rl_fail_key(err, RL_ERR_ARG, "attn_window",
                       "attn_window %u: lm_infinite's local branch is attn_remap_window %u (the "
                       "authors' code caps distances at the local branch); leave attn_window 0 "
                       "or set it equal", m->window, r->window);
    if (!m->n_sink)
        return rl_fail_key(err, RL_ERR_ARG, "attn_sinks",
                       "attn_sinks 0: lm_infinite needs its global branch, the first attn_sinks "
                       "tokens every query sees (the authors' global_branch, 100 by default)");
    m->window = r->window;
    return RL_OK;
}

static const char *const keys[] = {"attn_remap_window", "attn_sinks", "attn_window", NULL};

const attn_remap_method attn_remap_lm_infinite = {
    .name = "lm_infinite",
    .summary = "LM-Infinite: keys j < attn_sinks or i - j < L visible, distances beyond L read "
               "as L (L = attn_remap_window)",
    .source = "Han et al. 2023, LM-Infinite, arXiv:2308.16137; Glaciohound/LM-Infinite "
              "models/llama.py limited_distance_forward, models/lambda_attention.py "
              "Lambda_Attention_Matrix",
    .defs = ATTN_REMAP_DEFS_WINDOW,
    .keys = keys,
    .positions = positions,
    .distance = distance,
    .mask = mask,
};
