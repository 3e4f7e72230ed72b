/* nope — no position information (Kazemnejad et al. 2023 study decoder-only
 * models without any encoding; causal masking alone leaks order). Identity
 * vector transform (pe_add.comp mode 0, checked bit-exact), no bias. */
#include "pe/pe.h"

/* `ropelab check` rows: {label, params, tokens, heads, kv_heads, head_dim,
 * pos_cap_log2, quick}. */
static const pe_check_case vec_checks[] = {
    {"nope", "{}", 7, 8, 0, 64, 0, 1},
    {"nope", "{}", 257, 1, 0, 128, 0, 0},
};

const pe_family pe_family_nope = {
    .name = "nope",
    .title = "no position encoding",
    .paper = "Kazemnejad et al. 2023, The Impact of Positional Encoding on Length "
             "Generalization in Transformers, arXiv:2305.19466",
    .acts = 0,
    .params = NULL,
    .n_params = 0,
    .formula = "q' = q, k' = k, bias = 0",
    .ops = {0},
    .vec_checks = vec_checks,
    .n_vec_checks = RL_ARRAY_LEN(vec_checks),
};
