/* attn_remap string: STRING, shifted rotary positions (and the map its
 * variant string_paper, remap/string_paper.c, shares).
 *
 * An et al. 2024, "Why Does the Effective Context Length of LLMs Fall
 * Short?", arXiv:2410.18745: the positions a model saw rarely in training
 * (the large ones) are dropped by shifting the well-trained small ones over
 * them: distance d below the shift S is kept, d >= S reads as d - S + w
 * (w a small local window). The authors' code, HKUNLP/STRING
 * string_for_llama.py, which `string` follows:
 *   replace_with_string(max_test_length, shifted_offset, small_local_value
 *   = 128): diag_size = shifted_offset (S = attn_remap_window),
 *   local_window = small_local_value (w = attn_remap_local), attention_factor
 *   = 0.1 ln 2 + 1;
 *   RotaryEmbedding._set_cos_sin_cache: cos and sin both multiplied by
 *   attention_factor, so q and k each carry it and every logit its square
 *   (logit_factor below, on definition a; the paired exact definition of the
 *   distortion kind keeps plain RoPE's scale);
 *   forward (prefill): query_states_1 rotated at position_ids,
 *   query_states_2 at position_ids - diag_size + local_window, the keys at
 *   position_ids;
 *   string_flash_forward: a diagonal pass flash_attn_func(q1, k, v,
 *   causal, window_size = [diag_size, 0]), keys i - S <= j <= i
 *   (flash-attn's window is inclusive), and a shifted pass
 *   flash_attn_func(q2[-(N - S):], k[:N - S], v[:N - S], causal), the query
 *   i >= S over keys j <= i - S (bottom-right causal alignment), merged by
 *   their log-sum-exps (lse_gap, lse_gap_re).
 * The key j = i - S is in both passes, so the merged softmax holds it twice:
 * at distance S (exact) and at distance w (shifted). `string` follows that
 * (edge_both: attn_desc.remap_edge, the key's weight e^x + e^y; every
 * statistic is over keys). The code's decoding path (forward with a KV
 * cache: do_flash_decoding over key_cache[shifted_size:] and
 * key_cache[:shifted_size], shifted_size = kv_seq_len - diag_size) holds
 * every key once, distances 0..S - 1 exact and >= S shifted, which is the
 * paper's relative-position matrix: `string_paper` (the same entry without
 * the duplicate).
 * Positions: RoPE's logit depends on P_q - P_k only, so the shifted query
 * at p + w and the key at p + S give the code's distance (p_i - S + w) -
 * p_j without its negative positions (the first S - w shifted queries,
 * which the code computes and discards), and a bidirectional pass the same
 * formula on both sides (d <= -S: d - S + w). distance() gives the remapped
 * distance w at |d| = S (the duplicate's other term is the exact S). */
#include <math.h>

#include "attn/attn_remap.h"

rl_status attn_remap_string_check(const attn_remap *r, rl_error *err)
{
    if (r->local > r->window)
        return rl_fail_key(err, RL_ERR_ARG, "attn_remap_local",
                           "attn_remap_local %u: STRING's local window w must be at most its "
                           "shift S = attn_remap_window %u (distances d >= S read as d - S + w)",
                           r->local, r->window);
    return RL_OK;
}

void attn_remap_string_positions(const attn_remap *r, uint64_t p, uint64_t *q, uint64_t *k)
{
    *q = p + r->local;  /* the code's position_ids - diag_size + local_window, */
    *k = p + r->window; /* both shifted by diag_size: the same difference */
}

double attn_remap_string_distance(const attn_remap *r, int64_t pos_i, int64_t pos_j)
{
    double d = (double)(pos_i - pos_j), S = r->window;
    return fabs(d) < S ? d : d - S + (double)r->local;
}

const char *const attn_remap_string_keys[] = {"attn_remap_window", "attn_remap_local", NULL};

const attn_remap_method attn_remap_string = {
    .name = "string",
    .summary = "STRING (authors' prefill): exact within S, d - S + w beyond, the key at d = S "
               "under both; logits x (0.1 ln 2 + 1)^2 (S = attn_remap_window, w = "
               "attn_remap_local)",
    .source = "An et al. 2024, Why Does the Effective Context Length of LLMs Fall Short?, "
              "arXiv:2410.18745; HKUNLP/STRING string_for_llama.py forward, "
              "string_flash_forward, replace_with_string",
    .defs = ATTN_REMAP_DEFS_WINDOW,
    .keys = attn_remap_string_keys,
    .check = attn_remap_string_check,
    .positions = attn_remap_string_positions,
    .distance = attn_remap_string_distance,
    .edge_both = 1,
    .logit_factor = ATTN_REMAP_STRING_LOGIT_FACTOR,
};
