/* attn_remap string_paper: STRING with every key once.
 *
 * STRING's map (remap/string.c): distance d below the shift S kept, d >= S
 * read as d - S + w, logits x (0.1 ln 2 + 1)^2, but without the authors'
 * prefill duplicate of the key at d = S: the paper's relative-position
 * matrix (An et al. 2024, arXiv:2410.18745), and what the authors' code
 * computes when it decodes with a KV cache (HKUNLP/STRING
 * string_for_llama.py forward: do_flash_decoding over
 * key_cache[shifted_size:] and key_cache[:shifted_size], shifted_size =
 * kv_seq_len - diag_size: distances 0..S - 1 exact, >= S shifted). */
#include "attn/attn_remap.h"

const attn_remap_method attn_remap_string_paper = {
    .name = "string_paper",
    .summary = "STRING (paper, authors' decoding): exact within S, d - S + w beyond, each key "
               "once; logits x (0.1 ln 2 + 1)^2",
    .source = "An et al. 2024, arXiv:2410.18745 (the relative-position matrix); HKUNLP/STRING "
              "string_for_llama.py forward, its decoding path (do_flash_decoding)",
    .defs = ATTN_REMAP_DEFS_WINDOW,
    .keys = attn_remap_string_keys,
    .check = attn_remap_string_check,
    .positions = attn_remap_string_positions, /* string.c's map */
    .distance = attn_remap_string_distance,
    .logit_factor = ATTN_REMAP_STRING_LOGIT_FACTOR,
};
